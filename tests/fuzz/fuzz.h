/* The entry point every fuzz target defines. With -DWSRELAY_FUZZ=ON (clang)
 * libFuzzer drives it; otherwise replay.c feeds it each file of a corpus,
 * so that ctest replays the corpus in every build. */
#ifndef WSRELAY_FUZZ_H
#define WSRELAY_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
