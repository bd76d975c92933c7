/* Everything the integration tests share: child processes and scratch
 * files (proc.h), HTTP requests (http.h), the platform simulator
 * (simctl.h) and a webhook receiver (hooksink.h). */
#ifndef WSRELAY_TEST_SUPPORT_H
#define WSRELAY_TEST_SUPPORT_H

#include "hooksink.h"
#include "http.h"
#include "proc.h"
#include "simctl.h"

#endif
