/* The table of the state file's sections (section.h): the json-c ones and
 * the native ones, each in the order statefile.c writes and checks them. A new
 * section is one row here. */
#include "state/section.h"

/* The sections, in the order a new file writes them and a loaded one is
 * checked in: a file with two faults is always reported by the first. */
const struct state_section *const state_sections[] = {
    &state_section_seen,      /* seen.c */
    &state_section_floors,    /* seen.c */
    &state_section_marks,     /* seen.c */
    &state_section_logins,    /* ledger.c */
    &state_section_outbox,    /* outbox.c */
    &state_section_throttles, /* throttles.c */
    &state_section_counters,  /* counters.c */
    &state_section_receivers, /* health.c */
    &state_section_self,      /* self.c */
    &state_section_signals,   /* signals.c */
    &state_section_incidents, /* incidents.c */
    &state_section_silences,  /* silences.c */
};

const size_t state_n_sections = sizeof state_sections / sizeof state_sections[0];

/* The sections kept in their own form (section.h), written after the
 * others in this order: all but the last in the fleet file (fleetfile.c). */
const struct state_native *const state_natives[] = {
    &state_native_accounts,   /* devices.c */
    &state_native_history,    /* devices.c: in records only */
    &state_native_watch,      /* watchfile.c */
    &state_native_limits,     /* watchfile.c */
    &state_native_discovered, /* devices.c */
};

const size_t state_n_natives = sizeof state_natives / sizeof state_natives[0];

_Static_assert(sizeof state_natives / sizeof state_natives[0] == STATE_N_NATIVES,
               "STATE_N_NATIVES is the number of rows of state_natives");
