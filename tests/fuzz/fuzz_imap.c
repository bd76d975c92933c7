/* Fuzzes what notify/imap.c reads from a mail server and from a mail:
 * the input is taken as a FETCH answer (imap_parse_fetch), as a From:
 * field (imap_from_address) and as an In-Reply-To: field (imap_next_id).
 * Checks that a part taken from an answer is no longer than the answer,
 * that an address has one '@' between two sides and comes from the field
 * (ignoring case), and that every msg-id is "<...@...>" from the field. */
#include "fuzz.h"
#include "notify/imap.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* Whether `needle` occurs in `hay`, ignoring ASCII case. */
static int has_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++) {
        size_t i = 0;
        while (i < n && p[i] && tolower((unsigned char)p[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return n == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct imap_fetch f;
    if (imap_parse_fetch(&f, (const char *)data, size)) {
        if (!f.uid || (f.header && strlen(f.header) > size) || (f.mime && strlen(f.mime) > size) ||
            (f.text && strlen(f.text) > size))
            abort();
        imap_fetch_clear(&f);
    }
    char *text = xstrndup((const char *)data, size);
    char *addr = imap_from_address(text);
    if (addr) {
        char *at = strchr(addr, '@');
        if (!at || at == addr || !at[1] || strchr(at + 1, '@') || !has_ci(text, addr))
            abort();
        for (const char *p = addr; *p; p++)
            if (*p <= ' ' || *p >= 0x7f || (*p >= 'A' && *p <= 'Z'))
                abort();
        free(addr);
    }
    char id[512];
    for (const char *next = text; imap_next_id(id, sizeof id, &next);) {
        size_t len = strlen(id);
        if (len < 3 || id[0] != '<' || id[len - 1] != '>' || !strchr(id, '@') || !strstr(text, id))
            abort();
    }
    free(text);
    return 0;
}
