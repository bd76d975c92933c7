/* Mail composition: what reaches a header can never add one, encoded-words,
 * quoted-printable and base64 decode back to exactly what went in (decoded
 * here by small independent decoders), the MIME structure with and without
 * inline images (read again by Python's email package), the date, and the
 * Message-ID that retries and threading rely on. */
#include "mime.h"
#include "proc.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <openssl/sha.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- decoders written for the test ---- */

static int b64_value(char c)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char *p = c ? strchr(abc, c) : NULL;
    return p ? (int)(p - abc) : -1;
}

/* Appends the base64 text s[0..len) decoded; fails the test on bad input. */
static void b64_decode(struct buf *out, const char *s, size_t len)
{
    cr_assert_eq(len % 4, 0, "base64 of length %zu", len);
    for (size_t i = 0; i < len; i += 4) {
        int v[4];
        for (int k = 0; k < 4; k++)
            v[k] = s[i + k] == '=' ? 0 : b64_value(s[i + k]);
        for (int k = 0; k < 4; k++)
            cr_assert_geq(v[k], 0, "bad base64 character '%c'", s[i + k]);
        unsigned char b[3] = {(unsigned char)(v[0] << 2 | v[1] >> 4),
                              (unsigned char)(v[1] << 4 | v[2] >> 2),
                              (unsigned char)(v[2] << 6 | v[3])};
        size_t n = s[i + 2] == '=' ? 1 : s[i + 3] == '=' ? 2 : 3;
        buf_append(out, b, n);
    }
}

static bool valid_utf8(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        size_t n = *p < 0x80             ? 1
                   : (*p & 0xE0) == 0xC0 ? 2
                   : (*p & 0xF0) == 0xE0 ? 3
                   : (*p & 0xF8) == 0xF0 ? 4
                                         : 0;
        if (!n || p + n > end)
            return false;
        for (size_t i = 1; i < n; i++)
            if ((p[i] & 0xC0) != 0x80)
                return false;
        p += n;
    }
    return true;
}

/* The value of header `name` of `msg`, unfolded (CRLF before a space
 * removed), or NULL. Only the header section is searched. Caller frees. */
static char *header_value(const char *msg, const char *name)
{
    const char *end = strstr(msg, "\r\n\r\n");
    cr_assert_not_null(end, "no end of the header section");
    size_t n = strlen(name);
    for (const char *line = msg; line < end; line = strstr(line, "\r\n") + 2) {
        if (strncmp(line, name, n) || line[n] != ':')
            continue;
        struct buf b;
        buf_init(&b, 0);
        const char *p = line + n + 1;
        while (p < end + 2) {
            const char *eol = strstr(p, "\r\n");
            buf_append(&b, p, (size_t)(eol - p));
            p = eol + 2;
            if (*p != ' ' && *p != '\t')
                break;
        }
        return buf_steal(&b);
    }
    return NULL;
}

/* Decodes an unstructured value made of encoded-words only, checking each
 * word's length and that each holds whole UTF-8 characters. */
static char *decode_words(const char *value)
{
    struct buf out;
    buf_init(&out, 0);
    const char *p = value;
    while (*p == ' ')
        p++;
    while (*p) {
        cr_assert(!strncmp(p, "=?UTF-8?B?", 10), "not an encoded-word at: %s", p);
        const char *end = strstr(p + 10, "?=");
        cr_assert_not_null(end);
        size_t word_len = (size_t)(end + 2 - p);
        cr_assert_leq(word_len, 75, "encoded-word of %zu characters", word_len);
        struct buf one;
        buf_init(&one, 0);
        b64_decode(&one, p + 10, (size_t)(end - p - 10));
        cr_assert(valid_utf8(one.data, one.len), "a word splits a UTF-8 character");
        buf_append(&out, one.data, one.len);
        buf_free(&one);
        p = end + 2;
        while (*p == ' ')
            p++;
    }
    return buf_steal(&out);
}

static int hex_value(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Decodes quoted-printable, checking line lengths and that every soft
 * line decodes to valid UTF-8 by itself. */
static char *qp_decode(const char *s, size_t len)
{
    struct buf out, line;
    buf_init(&out, 0);
    buf_init(&line, 0);
    const char *end = s + len;
    while (s < end) {
        const char *eol = strstr(s, "\r\n");
        cr_assert(eol && eol < end + 1, "a quoted-printable line without CRLF");
        size_t n = (size_t)(eol - s);
        cr_assert_leq(n, 76, "a quoted-printable line of %zu characters: %.*s", n, (int)n, s);
        bool soft = n > 0 && s[n - 1] == '=';
        if (!soft && n > 0)
            cr_assert(s[n - 1] != ' ' && s[n - 1] != '\t', "whitespace before a line end");
        buf_reset(&line);
        for (size_t i = 0; i < n - soft; i++) {
            if (s[i] == '=') {
                int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
                cr_assert(hi >= 0 && lo >= 0, "bad escape in %.*s", (int)n, s);
                unsigned char c = (unsigned char)(hi << 4 | lo);
                buf_append(&line, &c, 1);
                i += 2;
            } else {
                cr_assert(s[i] == '\t' || (s[i] >= ' ' && s[i] < 0x7f), "a raw byte 0x%02x",
                          (unsigned char)s[i]);
                buf_append(&line, s + i, 1);
            }
        }
        cr_assert(valid_utf8(line.data, line.len), "a soft line splits a UTF-8 character");
        buf_append(&out, line.data, line.len);
        if (!soft)
            buf_puts(&out, "\r\n");
        s = eol + 2;
    }
    buf_free(&line);
    return buf_steal(&out);
}

/* "\n" and "\r\n" line ends made CRLF, as the message carries them. */
static char *crlf(const char *s)
{
    struct buf b;
    buf_init(&b, 0);
    for (; *s; s++) {
        if (*s == '\n' || (s[0] == '\r' && s[1] == '\n')) {
            buf_puts(&b, "\r\n");
            s += *s == '\r';
        } else {
            buf_append(&b, s, 1);
        }
    }
    return buf_steal(&b);
}

/* ---- composing ---- */

static const char *const one_to[] = {"oncall@example.org"};

static struct mime_mail sample(void)
{
    struct mime_mail m = {
        .from = "wsrelay <relay@example.org>",
        .to = one_to,
        .n_to = 1,
        .subject = "[wsrelay] 1 alert: Freezer - ch1",
        .text = "line one\nline two\n",
        .date = 1795000000,
        .message_id = "<wsrelay.mail.5214000A.ch1.1795000000@example.org>",
    };
    return m;
}

static char *compose_ok(const struct mime_mail *m)
{
    char *out = NULL;
    struct err e;
    cr_assert_eq(mime_compose(&out, m, &e), 0, "%s", e.msg);
    return out;
}

/* Every line ends with CRLF, the header section is only "Name: value"
 * lines and their continuations, and no header line passes 76 characters
 * unless it is one unbreakable token. */
static void check_shape(const char *msg)
{
    const char *end = strstr(msg, "\r\n\r\n");
    cr_assert_not_null(end);
    for (const char *p = msg; *p; p++) {
        if (*p == '\n')
            cr_assert(p > msg && p[-1] == '\r', "a bare LF");
        if (*p == '\r')
            cr_assert_eq(p[1], '\n', "a bare CR");
        cr_assert(*p == '\r' || *p == '\n' || *p == '\t' || (*p >= ' ' && *p < 0x7f),
                  "not printable 7-bit: 0x%02x", (unsigned char)*p);
    }
    for (const char *line = msg; line <= end; line = strstr(line, "\r\n") + 2) {
        size_t n = (size_t)(strstr(line, "\r\n") - line);
        if (line[0] != ' ') {
            size_t name = strspn(line, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-");
            cr_assert(name > 0 && line[name] == ':', "not a header line: %.*s", (int)n, line);
        }
        if (strncmp(line, "Message-ID:", 11) && strncmp(line, "In-Reply-To:", 12) &&
            strncmp(line, "References:", 11) && strncmp(line, "Content-Type:", 13))
            cr_assert_leq(n, 76, "header line of %zu characters: %.*s", n, (int)n, line);
    }
}

Test(mime, a_plain_message_is_complete_and_well_formed)
{
    struct mime_mail m = sample();
    char *msg = compose_ok(&m);
    check_shape(msg);
    const char *want = "Date: Wed, 18 Nov 2026 11:06:40 +0000\r\n"
                       "From: wsrelay <relay@example.org>\r\n"
                       "To: oncall@example.org\r\n"
                       "Subject: [wsrelay] 1 alert: Freezer - ch1\r\n"
                       "Message-ID: <wsrelay.mail.5214000A.ch1.1795000000@example.org>\r\n"
                       "Auto-Submitted: auto-generated\r\n"
                       "MIME-Version: 1.0\r\n"
                       "Content-Type: text/plain; charset=UTF-8\r\n"
                       "Content-Transfer-Encoding: quoted-printable\r\n"
                       "\r\n"
                       "line one\r\n"
                       "line two\r\n";
    cr_assert_str_eq(msg, want);
    free(msg);
}

Test(mime, header_injection_is_impossible)
{
    /* Through the subject (a device name): the line break goes. */
    struct mime_mail m = sample();
    m.subject = "x\r\nBcc: evil@example.net\nX-Evil: 1\r";
    char *msg = compose_ok(&m);
    check_shape(msg);
    cr_assert_null(strstr(msg, "\r\nBcc:"), "%s", msg);
    cr_assert_null(strstr(msg, "\r\nX-Evil:"), "%s", msg);
    char *subject = header_value(msg, "Subject");
    cr_assert_str_eq(subject, " xBcc: evil@example.netX-Evil: 1");
    free(subject);
    free(msg);

    /* Non-ASCII takes the encoded path: the break still goes. */
    m.subject = "冷凍庫\r\nBcc: evil@example.net";
    msg = compose_ok(&m);
    check_shape(msg);
    subject = header_value(msg, "Subject");
    char *decoded = decode_words(subject);
    cr_assert_str_eq(decoded, "冷凍庫Bcc: evil@example.net");
    free(decoded);
    free(subject);
    free(msg);

    /* Through an address or a display name: refused outright. */
    static const char *const bad[] = {
        "Lab\r\nBcc: evil@example.net <lab@example.org>",
        "lab@example.org\r\nBcc: evil@example.net",
        "Lab <lab@example.org>\nX: y",
        "Lab\x7f <lab@example.org>",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *to[] = {"ok@example.org", bad[i]};
        m = sample();
        m.to = to;
        m.n_to = 2;
        char *out = (char *)"untouched";
        struct err e;
        cr_assert_eq(mime_compose(&out, &m, &e), -1, "accepted %s", bad[i]);
        cr_assert_null(out);
        cr_assert(!strncmp(e.msg, "to[1]: ", 7), "%s", e.msg);
        m = sample();
        m.from = bad[i];
        cr_assert_eq(mime_compose(&out, &m, &e), -1);
        cr_assert(!strncmp(e.msg, "from: ", 6), "%s", e.msg);
    }

    /* The ids are written without anything that could break the line. */
    m = sample();
    m.message_id = "<a@b>\r\nBcc: evil@example.net";
    m.in_reply_to = "<c@d>\nBcc: x@y";
    msg = compose_ok(&m);
    check_shape(msg);
    cr_assert_null(strstr(msg, "\r\nBcc"), "%s", msg);
    free(msg);
}

Test(mime, a_long_japanese_subject_is_split_into_short_whole_character_words)
{
    const char *subject = "[wsrelay] 3 alerts: 超低温フリーザー 3号機 (−80℃) 検体保管室 B-204 – "
                          "ch1 上限値警報 and 2 more: 冷蔵室 1 通信エラー, 倉庫 電池残量低下 "
                          "🧊";
    struct mime_mail m = sample();
    m.subject = subject;
    char *msg = compose_ok(&m);
    check_shape(msg);
    char *value = header_value(msg, "Subject");
    cr_assert_geq(strlen(value), 200, "several words: %s", value);
    char *decoded = decode_words(value);
    cr_assert_str_eq(decoded, subject);
    free(decoded);
    free(value);
    free(msg);

    /* Words are split at every possible offset of 3- and 4-byte characters. */
    for (size_t pad = 0; pad < 4; pad++) {
        struct buf s;
        buf_init(&s, 0);
        for (size_t i = 0; i < pad; i++)
            buf_puts(&s, "a");
        for (int i = 0; i < 40; i++)
            buf_puts(&s, i % 3 ? "検" : "🧊");
        m.subject = s.data;
        msg = compose_ok(&m);
        check_shape(msg);
        value = header_value(msg, "Subject");
        decoded = decode_words(value);
        cr_assert_str_eq(decoded, s.data);
        free(decoded);
        free(value);
        free(msg);
        buf_free(&s);
    }
}

Test(mime, only_the_display_name_is_encoded)
{
    const char *to[] = {"山田 太郎 <taro@example.org>", "\"Lab, B-204\" <lab@example.org>",
                        "plain@example.org", "On Call <oncall@example.org>"};
    struct mime_mail m = sample();
    m.from = "\"冷凍庫 監視\" <relay@example.org>";
    m.to = to;
    m.n_to = 4;
    m.cc = to + 2;
    m.n_cc = 1;
    char *msg = compose_ok(&m);
    check_shape(msg);
    char *from = header_value(msg, "From");
    char *tov = header_value(msg, "To");
    char *cc = header_value(msg, "Cc");
    cr_assert(!strncmp(from, " =?UTF-8?B?", 11), "%s", from);
    cr_assert(strstr(from, "?= <relay@example.org>"), "%s", from);
    char *name = xstrndup(from + 1, (size_t)(strstr(from, " <") - from - 1));
    char *decoded = decode_words(name);
    cr_assert_str_eq(decoded, "冷凍庫 監視");
    free(decoded);
    free(name);
    cr_assert(strstr(tov, "?= <taro@example.org>,"), "%s", tov);
    cr_assert(strstr(tov, " \"Lab, B-204\" <lab@example.org>,"), "%s", tov);
    cr_assert(strstr(tov, " plain@example.org,"), "%s", tov);
    cr_assert(strstr(tov, " On Call <oncall@example.org>"), "%s", tov);
    cr_assert_null(strstr(tov, "example.org?="), "an address was encoded: %s", tov);
    cr_assert_str_eq(cc, " plain@example.org");
    free(from);
    free(tov);
    free(cc);
    free(msg);
}

Test(mime, quoted_printable_keeps_lines_short_and_decodes_exactly)
{
    const char *text =
        "short\n"
        "A line far longer than seventy-six characters, which must be wrapped with soft "
        "line breaks, more than once, so that no encoded line is longer than the limit.\n"
        "温度が上限値を超えました。冷凍庫の扉が開いていないか、停電していないか確認してください。"
        "記録計 5214000A。\n"
        "trailing space \n"
        "trailing tab\t\n"
        "a=b, 100% sure =3D\n"
        ".a line starting with a dot\n"
        "From the start of a line\n"
        "\n"
        "x\ty\r\n"
        "no newline at the end";
    struct mime_mail m = sample();
    m.text = text;
    char *msg = compose_ok(&m);
    check_shape(msg);
    const char *body = strstr(msg, "\r\n\r\n") + 4;
    cr_assert_null(strstr(body, "\r\n.a"), "a line starts with a dot");
    cr_assert_null(strstr(body, "\r\nFrom "), "a line starts with From");
    char *decoded = qp_decode(body, strlen(body));
    char *want = crlf(text);
    /* The message ends with CRLF; the text did not. */
    size_t n = strlen(decoded);
    cr_assert_geq(n, 2);
    cr_assert_str_eq(decoded + n - 2, "\r\n");
    decoded[n - 2] = '\0';
    cr_assert_str_eq(decoded, want);
    free(want);
    free(decoded);
    free(msg);
}

Test(mime, bytes_that_are_not_utf8_become_replacement_characters)
{
    struct mime_mail m = sample();
    m.subject = "bad \xff\xfe byte \xe6\x97";
    m.text = "text \xc0\xaf end\n";
    char *msg = compose_ok(&m);
    check_shape(msg);
    char *value = header_value(msg, "Subject");
    char *decoded = decode_words(value);
    cr_assert_str_eq(decoded, "bad \xEF\xBF\xBD\xEF\xBF\xBD byte \xEF\xBF\xBD\xEF\xBF\xBD");
    free(decoded);
    free(value);
    const char *body = strstr(msg, "\r\n\r\n") + 4;
    decoded = qp_decode(body, strlen(body));
    cr_assert_str_eq(decoded, "text \xEF\xBF\xBD\xEF\xBF\xBD end\r\n");
    free(decoded);
    free(msg);
}

Test(mime, html_makes_multipart_alternative_with_the_text_first)
{
    struct mime_mail m = sample();
    m.text = "plain 冷凍庫\n";
    m.html = "<p>html 冷凍庫</p>\n";
    char *msg = compose_ok(&m);
    check_shape(msg);
    char *ct = header_value(msg, "Content-Type");
    const char *prefix = " multipart/alternative; boundary=\"";
    cr_assert(!strncmp(ct, prefix, strlen(prefix)), "%s", ct);
    char *boundary = xstrndup(ct + strlen(prefix), strlen(ct) - strlen(prefix) - 1);
    cr_assert(!strncmp(boundary, "=_", 2), "a boundary QP cannot produce: %s", boundary);
    cr_assert_null(header_value(msg, "Content-Transfer-Encoding"), "not on the multipart");

    char *delim = xasprintf("\r\n--%s\r\n", boundary);
    char *close = xasprintf("\r\n--%s--\r\n", boundary);
    const char *first = strstr(msg, delim), *second = first ? strstr(first + 1, delim) : NULL;
    const char *last = strstr(msg, close);
    cr_assert(first && second && last && first < second && second < last, "%s", msg);
    cr_assert_null(strstr(second + 1, delim), "only two parts");
    cr_assert_str_eq(last + strlen(close), "", "the closing delimiter ends the message");
    const char *text_part = first + strlen(delim), *html_part = second + strlen(delim);
    const char *part_head = "Content-Type: text/plain; charset=UTF-8\r\n"
                            "Content-Transfer-Encoding: quoted-printable\r\n\r\n";
    cr_assert(!strncmp(text_part, part_head, strlen(part_head)), "%s", text_part);
    const char *html_head = "Content-Type: text/html; charset=UTF-8\r\n"
                            "Content-Transfer-Encoding: quoted-printable\r\n\r\n";
    cr_assert(!strncmp(html_part, html_head, strlen(html_head)), "%s", html_part);

    /* Each part decodes to its text; the CRLF before a delimiter belongs to it. */
    const char *t = text_part + strlen(part_head);
    char *decoded = qp_decode(t, (size_t)(second - t) + 2);
    cr_assert_str_eq(decoded, "plain 冷凍庫\r\n\r\n");
    free(decoded);
    const char *h = html_part + strlen(html_head);
    decoded = qp_decode(h, (size_t)(last - h) + 2);
    cr_assert_str_eq(decoded, "<p>html 冷凍庫</p>\r\n\r\n");
    free(decoded);

    /* Equal input, equal bytes (the boundary too). */
    char *again = compose_ok(&m);
    cr_assert_str_eq(again, msg);
    free(again);
    free(delim);
    free(close);
    free(boundary);
    free(ct);
    free(msg);
}

Test(mime, dates_are_rfc5322_in_utc)
{
    char d[64];
    mime_date(d, sizeof d, 1795000000);
    cr_assert_str_eq(d, "Wed, 18 Nov 2026 11:06:40 +0000");
    mime_date(d, sizeof d, 0);
    cr_assert_str_eq(d, "Thu, 1 Jan 1970 00:00:00 +0000");
    mime_date(d, sizeof d, 951782400); /* a leap day */
    cr_assert_str_eq(d, "Tue, 29 Feb 2000 00:00:00 +0000");
}

Test(mime, message_ids_are_stable_and_distinct)
{
    char *a = mime_message_id("mail", "5214000A", "ch1", 1795000000, 1, "example.org");
    char *b = mime_message_id("mail", "5214000A", "ch1", 1795000000, 1, "example.org");
    cr_assert_str_eq(a, "<wsrelay.mail.5214000A.ch1.1795000000@example.org>");
    cr_assert_str_eq(a, b, "a retry keeps its id");
    free(b);
    b = mime_message_id("mail", "5214000A", "ch2", 1795000000, 1, "example.org");
    cr_assert_str_neq(a, b);
    free(b);
    b = mime_message_id("mail", "5214000A", "ch1", 1795000001, 1, "example.org");
    cr_assert_str_neq(a, b);
    free(b);
    /* A batch that grew before its retry is a new mail. */
    b = mime_message_id("mail", "5214000A", "ch1", 1795000000, 3, "example.org");
    cr_assert_str_eq(b, "<wsrelay.mail.5214000A.ch1.1795000000+3@example.org>");
    free(b);
    free(a);

    /* Separators inside the parts cannot make two ids equal. */
    a = mime_message_id("a.b", "c", "battery-level", -5, 1, "ex ample.org");
    b = mime_message_id("a", "b.c", "battery-level", -5, 1, "ex ample.org");
    cr_assert_str_eq(a, "<wsrelay.a=2Eb.c.battery-level.-5@ex-ample.org>");
    cr_assert_str_eq(b, "<wsrelay.a.b=2Ec.battery-level.-5@ex-ample.org>");
    free(a);
    free(b);
    a = mime_message_id("r", "s<>\r\n", "k", 1, 1, NULL);
    cr_assert_str_eq(a, "<wsrelay.r.s=3C=3E=0D=0A.k.1@localhost>");
    free(a);
}

Test(mime, a_follow_up_names_the_mail_it_follows)
{
    char *alarm = mime_message_id("mail", "5214000A", "ch1", 1794999000, 1, "example.org");
    struct mime_mail m = sample();
    m.in_reply_to = alarm;
    char *msg = compose_ok(&m);
    check_shape(msg);
    char *irt = header_value(msg, "In-Reply-To");
    char *refs = header_value(msg, "References");
    cr_assert_str_eq(irt, " <wsrelay.mail.5214000A.ch1.1794999000@example.org>");
    cr_assert_str_eq(refs, irt);
    free(irt);
    free(refs);
    free(msg);
    m.in_reply_to = NULL;
    msg = compose_ok(&m);
    cr_assert_null(strstr(msg, "In-Reply-To"));
    cr_assert_null(strstr(msg, "References"));
    free(msg);
    free(alarm);
}

/* ---- addresses ---- */

Test(mime, addresses_that_parse)
{
    static const struct {
        const char *in, *name, *addr;
    } ok[] = {
        {"a@example.org", "", "a@example.org"},
        {"  first.last+tag@mail.example.org ", "", "first.last+tag@mail.example.org"},
        {"Lab <lab@example.org>", "Lab", "lab@example.org"},
        {"  On Call   <oncall@example.org>", "On Call", "oncall@example.org"},
        {"\"Lab, B-204 \\\"cold\\\"\" <lab@example.org>", "Lab, B-204 \"cold\"", "lab@example.org"},
        {"冷凍庫 監視 <relay@example.org>", "冷凍庫 監視", "relay@example.org"},
        {"<bare@example.org>", "", "bare@example.org"},
        {"root@localhost", "", "root@localhost"},
        {"x!#$%&'*+-/=?^_`{|}~@a-b.example", "", "x!#$%&'*+-/=?^_`{|}~@a-b.example"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        struct mime_address a;
        struct err e;
        cr_assert_eq(mime_address_parse(&a, ok[i].in, &e), 0, "%s: %s", ok[i].in, e.msg);
        cr_assert_str_eq(a.name, ok[i].name, "%s", ok[i].in);
        cr_assert_str_eq(a.addr, ok[i].addr, "%s", ok[i].in);
        mime_address_clear(&a);
    }
}

Test(mime, addresses_that_do_not)
{
    static const struct {
        const char *in, *why;
    } bad[] = {
        {"", "expected an address"},
        {"nobody", "expected an address"},
        {"a@b@example.org", "exactly one '@'"},
        {"me@home <a@example.org>", "exactly one '@'"},
        {"a@example.org\r\n", "control character"},
        {"Lab\t<a@example.org>", "control character"},
        {"\"a b\"@example.org", "expected name@example.org or Display Name"},
        {"a b@example.org", "expected name@example.org or Display Name"},
        {".a@example.org", "single dots"},
        {"a..b@example.org", "single dots"},
        {"a@", "expected a domain"},
        {"a@-example.org", "expected a domain"},
        {"a@example..org", "expected a domain"},
        {"a@exa_mple.org", "expected a domain"},
        {"a@[127.0.0.1]", "expected name@example.org or Display Name"},
        {"ü@example.org", "must be ASCII"},
        {"Lab <lab@example.org", "expected name@example.org or Display Name"},
        {"Lab lab@example.org>", "a '>' without a '<'"},
        {"\"Lab <lab@example.org>", "quotes are not balanced"},
        {"La\"b <lab@example.org>", "must be written in double quotes"},
        {"\xff <lab@example.org>", "not valid UTF-8"},
        {"Lab <>", "expected an address"},
        {"Lab <lab> x@example.org", "expected name@example.org or Display Name"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct mime_address a = {(char *)"x", (char *)"y"};
        struct err e;
        cr_assert_eq(mime_address_parse(&a, bad[i].in, &e), -1, "accepted %s", bad[i].in);
        cr_assert_null(a.addr);
        cr_assert_not_null(strstr(e.msg, bad[i].why), "%s: %s", bad[i].in, e.msg);
    }
    /* 64 characters before the '@' at most, 254 in all. */
    struct buf b;
    buf_init(&b, 0);
    for (int i = 0; i < 65; i++)
        buf_puts(&b, "a");
    buf_puts(&b, "@example.org");
    struct mime_address a;
    struct err e;
    cr_assert_eq(mime_address_parse(&a, b.data + 1, &e), 0, "%s", e.msg);
    mime_address_clear(&a);
    cr_assert_eq(mime_address_parse(&a, b.data, &e), -1);
    buf_free(&b);
}

/* ---- inline images ---- */

/* `len` bytes that start like a PNG file and go on with every byte value,
 * CR, LF and NUL included, in an order that `seed` picks. Caller frees. */
static unsigned char *image_bytes(size_t len, uint32_t seed)
{
    static const unsigned char png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    unsigned char *p = xmalloc(len);
    uint32_t x = seed | 1;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        p[i] = i < sizeof png ? png[i] : (unsigned char)(x >> 24);
    }
    return p;
}

static char *sha256_hex(const unsigned char *p, size_t len)
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(p, len, md);
    struct buf b;
    buf_init(&b, 0);
    for (size_t i = 0; i < sizeof md; i++)
        buf_printf(&b, "%02x", md[i]);
    return buf_steal(&b);
}

/* Every line of the message, body included, ends with CRLF and holds at
 * most 76 characters. */
static void check_lines(const char *msg)
{
    size_t n = strlen(msg);
    cr_assert(n >= 2 && !strcmp(msg + n - 2, "\r\n"), "the message ends with CRLF");
    for (const char *line = msg; *line; line = strstr(line, "\r\n") + 2) {
        size_t len = (size_t)(strstr(line, "\r\n") - line);
        cr_assert_leq(len, 76, "a line of %zu characters: %.*s", len, (int)len, line);
    }
}

/* The text between the end of `start` (found in `s`) and the next `end`;
 * fails the test when either is missing. Caller frees. */
static char *between(const char *s, const char *start, const char *end)
{
    const char *a = strstr(s, start);
    cr_assert_not_null(a, "no %s in:\n%s", start, s);
    a += strlen(start);
    const char *b = strstr(a, end);
    cr_assert_not_null(b, "no %s after %s in:\n%s", end, start, s);
    return xstrndup(a, (size_t)(b - a));
}

/* The base64 body `body` (lines joined by CRLF) decoded, checking that
 * every line but the last has 76 characters and the last at most 76. */
static void b64_body(struct buf *out, const char *body)
{
    struct buf joined;
    buf_init(&joined, 0);
    for (const char *line = body;;) {
        const char *eol = strstr(line, "\r\n");
        size_t n = eol ? (size_t)(eol - line) : strlen(line);
        if (eol)
            cr_assert_eq(n, 76, "a base64 line of %zu characters before the last", n);
        else
            cr_assert(n > 0 && n <= 76, "a last base64 line of %zu characters", n);
        buf_append(&joined, line, n);
        if (!eol)
            break;
        line = eol + 2;
    }
    b64_decode(out, joined.data, joined.len);
    buf_free(&joined);
}

static struct mime_image chart(const unsigned char *data, size_t len)
{
    struct mime_image im = {
        .content_id = "chart-1@wsrelay",
        .content_type = "image/png",
        .filename = "chart.png",
        .data = data,
        .len = len,
    };
    return im;
}

/* The mail of the tests with an HTML part and these images. */
static struct mime_mail with_images(const struct mime_image *images, size_t n)
{
    struct mime_mail m = sample();
    m.text = "plain 冷凍庫\n";
    m.html = "<p>html 冷凍庫</p>\n<img src=\"cid:chart-1@wsrelay\">\n";
    m.images = images;
    m.n_images = n;
    return m;
}

static void expect_refused(const struct mime_mail *m, const char *why)
{
    char *out = (char *)"untouched";
    struct err e;
    cr_assert_eq(mime_compose(&out, m, &e), -1, "accepted (%s)", why);
    cr_assert_null(out);
    cr_assert_not_null(strstr(e.msg, why), "%s", e.msg);
}

Test(mime, an_image_goes_into_multipart_related_beside_the_html)
{
    unsigned char *png = image_bytes(40000, 7);
    struct mime_image im = chart(png, 40000);
    struct mime_mail m = with_images(&im, 1);
    char *msg = compose_ok(&m);
    check_shape(msg);
    check_lines(msg);

    char *ct = header_value(msg, "Content-Type");
    const char *prefix = " multipart/alternative; boundary=\"";
    cr_assert(!strncmp(ct, prefix, strlen(prefix)), "%s", ct);
    char *outer = xstrndup(ct + strlen(prefix), strlen(ct) - strlen(prefix) - 1);
    cr_assert(strlen(outer) == 26 && !strncmp(outer, "=_wsrelay_", 10), "%s", outer);
    char *related = xasprintf("=_wsrelay_rel_%s", outer + 10);

    /* The frame, part by part; the image's lines are checked below. */
    char *text_part = xasprintf("--%s\r\n"
                                "Content-Type: text/plain; charset=UTF-8\r\n"
                                "Content-Transfer-Encoding: quoted-printable\r\n"
                                "\r\n"
                                "plain =E5=86=B7=E5=87=8D=E5=BA=AB\r\n"
                                "\r\n"
                                "--%s\r\n"
                                "Content-Type: multipart/related; type=\"text/html\";\r\n"
                                " boundary=\"%s\"\r\n"
                                "\r\n"
                                "--%s\r\n"
                                "Content-Type: text/html; charset=UTF-8\r\n",
                                outer, outer, related, related);
    const char *body = strstr(msg, "\r\n\r\n") + 4;
    cr_assert(!strncmp(body, text_part, strlen(text_part)), "%s", body);
    char *image_head = xasprintf("\r\n--%s\r\n"
                                 "Content-Type: image/png; name=\"chart.png\"\r\n"
                                 "Content-Transfer-Encoding: base64\r\n"
                                 "Content-ID: <chart-1@wsrelay>\r\n"
                                 "Content-Disposition: inline; filename=\"chart.png\"\r\n"
                                 "\r\n",
                                 related);
    char *tail = xasprintf("\r\n--%s--\r\n--%s--\r\n", related, outer);
    const char *image = strstr(msg, image_head);
    cr_assert_not_null(image, "%s", msg);
    const char *end = strstr(image, tail);
    cr_assert_not_null(end, "%s", image);
    cr_assert_str_eq(end + strlen(tail), "", "the closing delimiters end the message");
    char *delim = xasprintf("--%s", related);
    cr_assert_eq(strstr(strstr(body, delim) + 1, delim), image + 2, "the image is the second part");
    free(delim);

    /* The base64 decodes to the very bytes. */
    char *b64 = xstrndup(image + strlen(image_head), (size_t)(end - image - strlen(image_head)));
    struct buf decoded;
    buf_init(&decoded, 0);
    b64_body(&decoded, b64);
    cr_assert_eq(decoded.len, 40000);
    cr_assert(!memcmp(decoded.data, png, 40000), "the image came back changed");
    buf_free(&decoded);
    free(b64);

    /* The HTML part is the one a mail without images has, byte for byte. */
    struct mime_mail plain = with_images(NULL, 0);
    char *without = compose_ok(&plain);
    char *html = between(without, "\r\nContent-Type: text/html", "\r\n--=_wsrelay_");
    char *html_here = between(msg, "\r\nContent-Type: text/html", "\r\n--=_wsrelay_");
    cr_assert_str_eq(html_here, html);
    cr_assert(strstr(html, "cid:chart-1@wsrelay"), "%s", html);
    free(html_here);
    free(html);
    free(without);

    free(tail);
    free(image_head);
    free(text_part);
    free(related);
    free(outer);
    free(ct);
    free(msg);
    free(png);
}

/* Python's email package (policy.default) parses `msg` from a file in a
 * scratch directory and prints the tree: one line a part, indented by
 * depth, then the number of defects it found. */
static char *python_tree(const char *msg)
{
    static const char script[] =
        "import email, hashlib, sys\n"
        "from email import policy\n"
        "with open(sys.argv[1], 'rb') as f:\n"
        "    msg = email.message_from_bytes(f.read(), policy=policy.default)\n"
        "defects = 0\n"
        "def show(part, depth):\n"
        "    global defects\n"
        "    defects += len(part.defects)\n"
        "    for name, value in part.items():\n"
        "        defects += len(getattr(value, 'defects', ()))\n"
        "    line = '  ' * depth + part.get_content_type()\n"
        "    if part.is_multipart():\n"
        "        if part.get_param('type'):\n"
        "            line += ' type=' + part.get_param('type')\n"
        "        print(line)\n"
        "        for child in part.iter_parts():\n"
        "            show(child, depth + 1)\n"
        "    elif part.get_content_maintype() == 'text':\n"
        "        print(line, ascii(part.get_content()))\n"
        "    else:\n"
        "        data = part.get_content()\n"
        "        print(line, 'id=' + part['Content-ID'], part.get_content_disposition(),\n"
        "              'filename=' + str(part.get_filename()), 'len=%d' % len(data),\n"
        "              'sha256=' + hashlib.sha256(data).hexdigest())\n"
        "show(msg, 0)\n"
        "print('defects', defects)\n";
    char *dir = test_tmpdir();
    char *path = xasprintf("%s/mail.eml", dir);
    write_file(path, msg);
    char *out = NULL, *err = NULL;
    char *argv[] = {(char *)"python3", (char *)"-c", (char *)script, path, NULL};
    int status = run_cmd(&out, &err, 60, argv, NULL);
    cr_assert_eq(status, 0, "python3 failed (%d):\n%s", status, err);
    free(err);
    test_rmtree(dir);
    free(path);
    free(dir);
    return out;
}

Test(mime, a_real_mime_parser_reads_the_tree_and_the_images)
{
    unsigned char *png = image_bytes(40000, 7), *jpeg = image_bytes(1001, 8);
    jpeg[0] = 0xff, jpeg[1] = 0xd8; /* the start of a JPEG file */
    struct mime_image ims[2] = {chart(png, 40000), chart(jpeg, 1001)};
    ims[1].content_id = "photo.2@lab-b204.example.org";
    ims[1].content_type = "image/jpeg";
    ims[1].filename = NULL;
    struct mime_mail m = with_images(ims, 2);
    char *msg = compose_ok(&m);
    check_shape(msg);
    check_lines(msg);
    char *tree = python_tree(msg);
    char *sum_png = sha256_hex(png, 40000), *sum_jpeg = sha256_hex(jpeg, 1001);
    char *want = xasprintf(
        "multipart/alternative\n"
        "  text/plain 'plain \\u51b7\\u51cd\\u5eab\\r\\n'\n"
        "  multipart/related type=text/html\n"
        "    text/html '<p>html \\u51b7\\u51cd\\u5eab</p>\\r\\n<img "
        "src=\"cid:chart-1@wsrelay\">\\r\\n'\n"
        "    image/png id=<chart-1@wsrelay> inline filename=chart.png len=40000 sha256=%s\n"
        "    image/jpeg id=<photo.2@lab-b204.example.org> inline filename=None len=1001 "
        "sha256=%s\n"
        "defects 0\n",
        sum_png, sum_jpeg);
    cr_assert_str_eq(tree, want);
    free(want);
    free(sum_png);
    free(sum_jpeg);
    free(tree);
    free(msg);
    free(jpeg);
    free(png);
}

Test(mime, two_images_come_in_order_each_with_its_id)
{
    unsigned char *a = image_bytes(57, 1), *b = image_bytes(58, 2);
    struct mime_image ims[2] = {chart(a, 57), chart(b, 58)};
    ims[1].content_id = "chart-2@wsrelay";
    ims[1].filename = "chart 2.png";
    struct mime_mail m = with_images(ims, 2);
    char *msg = compose_ok(&m);
    check_shape(msg);
    check_lines(msg);
    const char *first = strstr(msg, "Content-ID: <chart-1@wsrelay>\r\n");
    const char *second = strstr(msg, "Content-ID: <chart-2@wsrelay>\r\n");
    cr_assert(first && second && first < second, "%s", msg);
    cr_assert(strstr(msg, "Content-Disposition: inline; filename=\"chart 2.png\"\r\n"), "%s", msg);

    /* 57 bytes make exactly one line of 76; 58 a second line of 4. */
    char *one = between(first, "\r\n\r\n", "\r\n--");
    char *two = between(second, "\r\n\r\n", "\r\n--");
    cr_assert_eq(strlen(one), 76, "%s", one);
    cr_assert_eq(strlen(two), 76 + 2 + 4, "%s", two);
    struct buf d;
    buf_init(&d, 0);
    b64_body(&d, one);
    cr_assert(d.len == 57 && !memcmp(d.data, a, 57));
    buf_reset(&d);
    b64_body(&d, two);
    cr_assert(d.len == 58 && !memcmp(d.data, b, 58));
    buf_free(&d);
    free(one);
    free(two);
    free(msg);
    free(a);
    free(b);
}

Test(mime, a_content_id_is_checked_and_never_changed)
{
    static const struct {
        const char *id, *why;
    } bad[] = {
        {"chart\r\nBcc: evil@example.net", "expected a content_id such as chart-1@wsrelay"},
        {"chart@wsrelay\r\nBcc: evil@example.net", "expected a content_id"},
        {"chart@wsrelay\nX-Evil: 1", "expected a content_id"},
        {"<chart@wsrelay>", "without angle brackets"},
        {"chart@wsrelay>\r\nX: <y@z", "expected a content_id"},
        {"\"chart\"@wsrelay", "expected a content_id"},
        {"chart@wsrelay\"", "expected a content_id"},
        {"chärt@wsrelay", "expected a content_id"},
        {"chart@ws relay", "expected a content_id"},
        {"chart\t@wsrelay", "expected a content_id"},
        {"chart", "expected a content_id"},
        {"chart@", "expected a content_id"},
        {"@wsrelay", "expected a content_id"},
        {"a@b@c", "expected a content_id"},
        {".a@b", "expected a content_id"},
        {"a.@b", "expected a content_id"},
        {"a..b@c", "expected a content_id"},
        {"a@b.", "expected a content_id"},
        {"a%41@b", "expected a content_id"},
        {"", "expected a content_id"},
        {NULL, "expected a content_id"},
        {"a123456789a123456789a123456789a123456789a123456789@123456789abc",
         "longer than 62 characters"},
    };
    unsigned char png[] = {0x89, 'P', 'N', 'G'};
    struct mime_image ims[2] = {chart(png, 4), chart(png, 4)};
    struct mime_mail m = with_images(ims, 2);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ims[1].content_id = bad[i].id;
        char *out = (char *)"untouched";
        struct err e;
        cr_assert_eq(mime_compose(&out, &m, &e), -1, "accepted %s", bad[i].id);
        cr_assert_null(out);
        cr_assert(!strncmp(e.msg, "images[1]: ", 11), "%s", e.msg);
        cr_assert_not_null(strstr(e.msg, bad[i].why), "%s: %s", bad[i].id, e.msg);
    }

    static const char *const good[] = {
        "chart-2@wsrelay",
        "a@b",
        "wsrelay.mail.5214000A.ch1_chart@example.org",
        "a123456789a123456789a123456789a123456789a123456789@123456789ab",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        ims[1].content_id = good[i];
        char *msg = compose_ok(&m);
        check_lines(msg);
        char *line = xasprintf("\r\nContent-ID: <%s>\r\n", good[i]);
        cr_assert(strstr(msg, line), "%s", msg);
        free(line);
        free(msg);
    }

    /* Two images with one id: the HTML could show only one. */
    ims[1].content_id = ims[0].content_id;
    expect_refused(&m, "images[1]: the content_id is the same as images[0]'s");
}

Test(mime, a_filename_is_cleaned_and_cannot_add_a_header_line)
{
    static const struct {
        const char *in, *out;
    } names[] = {
        {"x\r\nBcc: evil@example.net\".png", "x__Bcc_ evil_example.net_.png"},
        {"a\"; name=\"b.exe", "a__ name__b.exe"},
        {"冷凍庫 chart.png", "___ chart.png"},
        {"bad \xff\xfe.png", "bad __.png"},
        {"../../etc/passwd", ".._.._etc_passwd"},
        {"=?UTF-8?B?eA==?=.png", "__UTF-8_B_eA____.png"},
        {"tab\tand\\back+slash.png", "tab_and_back+slash.png"},
        {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.png",
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
         "aaaaaaaa.png"},
        {"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
         "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"},
        {"cccccccccccccccccccccccccccccccccccccccccccccccccc.averylongextension",
         "cccccccccccccccccccccccccccccccccccccccccccccccccc.averylong"},
    };
    unsigned char png[] = {0x89, 'P', 'N', 'G'};
    struct mime_image im = chart(png, 4);
    struct mime_mail m = with_images(&im, 1);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        im.filename = names[i].in;
        char *msg = compose_ok(&m);
        check_shape(msg);
        check_lines(msg);
        cr_assert_null(strstr(msg, "\r\nBcc"), "%s", msg);
        cr_assert_null(strstr(msg, "\r\n name=\"b.exe"), "%s", msg);
        char *type = between(msg, "\r\nContent-Type: image/png;", "\r\nContent-Transfer");
        char *disposition = between(msg, "\r\nContent-Disposition: inline;", "\r\n\r\n");
        char *want = xasprintf("name=\"%s\"", names[i].out);
        /* On the line, or on a line of its own when the line would be long. */
        cr_assert(!strcmp(type + 1, want) || !strncmp(type, "\r\n ", 3), "%s", type);
        cr_assert_str_eq(type + (type[0] == ' ' ? 1 : 3), want);
        free(want);
        want = xasprintf("filename=\"%s\"", names[i].out);
        cr_assert_str_eq(disposition + (disposition[0] == ' ' ? 1 : 3), want);
        free(want);
        free(disposition);
        free(type);
        free(msg);
    }

    /* No name: the parameters are left out. */
    im.filename = "";
    char *msg = compose_ok(&m);
    cr_assert(strstr(msg, "\r\nContent-Type: image/png\r\n"), "%s", msg);
    cr_assert(strstr(msg, "\r\nContent-Disposition: inline\r\n"), "%s", msg);
    free(msg);
}

Test(mime, only_png_and_jpeg_with_data_and_within_the_cap)
{
    unsigned char png[] = {0x89, 'P', 'N', 'G'};
    struct mime_image im = chart(png, 4);
    struct mime_mail m = with_images(&im, 1);
    static const char *const types[] = {
        "image/gif", "image/svg+xml", "IMAGE/PNG", "image/png\r\nX-Evil: 1", "text/html", ""};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        im.content_type = types[i];
        expect_refused(&m, "images[0]: the content_type must be image/png or image/jpeg");
    }
    im.content_type = NULL;
    expect_refused(&m, "images[0]: the content_type must be image/png or image/jpeg");
    im = chart(png, 0);
    expect_refused(&m, "images[0]: the image has no data");
    im = chart(NULL, 4);
    expect_refused(&m, "images[0]: the image has no data");

    /* 10 MiB of images in all at most (they are not read when refused). */
    size_t half = 5u << 20;
    unsigned char *big = xcalloc(half + 1, 1);
    struct mime_image two[2] = {chart(big, half), chart(big, half + 1)};
    two[1].content_id = "chart-2@wsrelay";
    m = with_images(two, 2);
    expect_refused(&m, "images[1]: the images come to more than the 10 MiB a mail may carry");
    free(big);
}

Test(mime, equal_input_gives_equal_bytes_and_another_image_another_boundary)
{
    unsigned char *a = image_bytes(3000, 11), *b = image_bytes(3000, 11);
    struct mime_image im = chart(a, 3000);
    struct mime_mail m = with_images(&im, 1);
    char *one = compose_ok(&m);
    im.data = b; /* equal bytes at another address */
    char *two = compose_ok(&m);
    cr_assert_str_eq(one, two);
    b[1500] ^= 1;
    char *three = compose_ok(&m);
    char *ct1 = header_value(one, "Content-Type"), *ct3 = header_value(three, "Content-Type");
    cr_assert_str_neq(ct1, ct3, "one changed bit, one boundary");
    free(ct1);
    free(ct3);
    free(one);
    free(two);
    free(three);
    free(a);
    free(b);
}

Test(mime, without_html_images_are_checked_then_left_out)
{
    unsigned char *png = image_bytes(500, 3);
    struct mime_image im = chart(png, 500);
    struct mime_mail m = with_images(&im, 1);
    m.html = NULL;
    char *msg = compose_ok(&m);
    m.images = NULL;
    m.n_images = 0;
    char *plain = compose_ok(&m);
    cr_assert_str_eq(msg, plain, "the text-only message, as without images");
    cr_assert(strstr(msg, "\r\nContent-Type: text/plain; charset=UTF-8\r\n"), "%s", msg);
    free(plain);
    free(msg);

    m.images = &im;
    m.n_images = 1;
    im.content_id = "chart-1@wsrelay\r\nBcc: evil@example.net";
    expect_refused(&m, "images[0]: expected a content_id");
    free(png);
}
