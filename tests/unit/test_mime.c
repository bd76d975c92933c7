/* Mail composition: what reaches a header can never add one, encoded-words
 * and quoted-printable decode back to exactly what went in (decoded here
 * by small independent decoders), the MIME structure, the date, and the
 * Message-ID that retries and threading rely on. */
#include "mime.h"
#include "util/buf.h"
#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdint.h>
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
