/* notify/imap.c's readings of a mail's fields: the one address of a From:
 * field, whatever its display name holds, and the msg-ids of In-Reply-To
 * and References; the mailbox's secrets among the receiver's. The talk
 * with a server is test_mailack's (Dovecot). */
#include "notify/imap.h"
#include "notify/notify.h"
#include "util/redact.h"

#include "util/xalloc.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static void from_is(const char *field, const char *want)
{
    char *got = imap_from_address(field);
    if (!want)
        cr_assert_null(got, "From: %s gave %s", field, got);
    else
        cr_assert_str_eq(got ? got : "(null)", want, "From: %s", field);
    free(got);
}

Test(imap, a_from_field_gives_its_one_address_in_lower_case)
{
    from_is("ann@lab.example", "ann@lab.example");
    from_is("  Ann@Lab.Example  ", "ann@lab.example");
    from_is("Ann Example <ANN@lab.example>", "ann@lab.example");
    from_is("\"Example, Ann\" <ann@lab.example>", "ann@lab.example");
    from_is("ann@lab.example (Ann in the lab)", "ann@lab.example");
    from_is("=?UTF-8?B?5bGx55Sw?= <yamada@lab.example>", "yamada@lab.example");
}

Test(imap, a_display_name_cannot_smuggle_an_address)
{
    from_is("\"oncall@lab.example\" <eve@evil.example>", "eve@evil.example");
    from_is("\"Boss <boss@lab.example>\" <eve@evil.example>", "eve@evil.example");
    from_is("eve@evil.example (oncall@lab.example)", "eve@evil.example");
    from_is("oncall@lab.example <eve@evil.example>", "eve@evil.example");
}

Test(imap, a_from_field_of_no_or_several_mailboxes_gives_none)
{
    from_is("", NULL);
    from_is("Ann", NULL);
    from_is("ann@lab.example, eve@evil.example", NULL);
    from_is("Ann <ann@lab.example>, Eve <eve@evil.example>", NULL);
    from_is("team: ann@lab.example;", NULL);
    from_is("<ann@lab.example> <eve@evil.example>", NULL);
    from_is("Ann <ann@lab.example> eve@evil.example", NULL);
    from_is("Ann <ann@lab.example", NULL);
    from_is("\"Ann <ann@lab.example>", NULL);
    from_is("Ann <ann@@lab.example>", NULL);
    from_is("Ann <@lab.example>", NULL);
    from_is("onc\"x\"all@lab.example", NULL); /* no address pieced together around quotes */
    from_is("x\"y\" oncall@lab.example", NULL);
    from_is("onc(x)all@lab.example", NULL);
    from_is("<ann@lab.example> \"Ann\"", NULL);
    from_is("Ann <ann@>", NULL);
}

Test(imap, the_msg_ids_of_a_field_come_one_after_the_other)
{
    char id[64];
    const char *next = "<a@b> (comment)\t<wsrelay.mail.5214000A.ch1.1794999000@example.org> "
                       "<no-at> <x@y";
    cr_assert(imap_next_id(id, sizeof id, &next));
    cr_assert_str_eq(id, "<a@b>");
    cr_assert(imap_next_id(id, sizeof id, &next));
    cr_assert_str_eq(id, "<wsrelay.mail.5214000A.ch1.1794999000@example.org>");
    cr_assert_not(imap_next_id(id, sizeof id, &next), "<no-at> and an unclosed one are none");
    /* one longer than the room is skipped, not cut */
    char small[8];
    next = "<abcdefgh@ij> <a@b>";
    cr_assert(imap_next_id(small, sizeof small, &next));
    cr_assert_str_eq(small, "<a@b>");
    next = NULL;
    cr_assert_not(imap_next_id(id, sizeof id, &next));
}

Test(imap, the_mailbox_password_in_every_login_form_and_the_pin_are_secrets)
{
    char user[] = "relay", password[] = "imap-S3cret-pw!", pin[] = "7391";
    struct receiver_conf r = {.name = (char *)"mail", .type = RECEIVER_EMAIL};
    r.email.ack = (struct email_ack_conf){.imap = (char *)"imaps://127.0.0.1/INBOX",
                                          .username = user,
                                          .password = password,
                                          .pin = pin};
    struct redact *secrets = redact_new();
    notify_add_secrets(secrets, &r);
    char blob[] = "\0relay\0imap-S3cret-pw!"; /* AUTHENTICATE PLAIN */
    char *plain = redact_base64(blob, sizeof blob - 1);
    char *login = redact_base64(password, strlen(password));
    char *text = xasprintf("A1 LOGIN relay %s | %s | %s | ACK 12 %s", password, plain, login, pin);
    char *clean = redact_text(secrets, text);
    cr_assert_null(strstr(clean, password), "%s", clean);
    cr_assert_null(strstr(clean, plain), "%s", clean);
    cr_assert_null(strstr(clean, login), "%s", clean);
    cr_assert_null(strstr(clean, pin), "%s", clean);
    cr_assert(strstr(clean, "A1 LOGIN relay "), "%s", clean);
    free(clean);
    free(text);
    free(login);
    free(plain);
    redact_free(secrets);
}

Test(imap, a_fetch_answer_is_taken_apart_by_its_literal_counts)
{
    /* a mail whose text holds lines that look like the server's own */
    static const char text[] = "ACK 1 moving\r\nA004 OK done\r\n* 2 FETCH (UID 9 BODY[1] {3}\r\n";
    static const char header[] = "From: Ann <ann@lab.example>\r\n\r\n";
    char *answer = xasprintf("* OK [CAPABILITY IMAP4rev1] ready\r\n"
                             "A003 OK [READ-WRITE] Select completed\r\n"
                             "* 1 FETCH (UID 7 FLAGS (\\Seen \\Answered) "
                             "BODY[HEADER.FIELDS (FROM IN-REPLY-TO REFERENCES)] {%zu}\r\n%s"
                             " BODY[1.MIME] NIL BODY[1]<0> {%zu}\r\n%s)\r\n"
                             "A004 OK Fetch completed.\r\n",
                             strlen(header), header, strlen(text), text);
    struct imap_fetch f;
    cr_assert(imap_parse_fetch(&f, answer, strlen(answer)));
    cr_assert_eq(f.uid, 7);
    cr_assert_str_eq(f.header, header);
    cr_assert_null(f.mime);
    cr_assert_str_eq(f.text, text);
    imap_fetch_clear(&f);
    /* a literal longer than what came, a missing ')' or UID: nothing */
    static const char *const cut[] = {
        "* 1 FETCH (UID 7 BODY[1] {99}\r\nshort\r\n",
        "* 1 FETCH (UID 7 BODY[1] {5}\r\nshort",
        "* 1 FETCH (BODY[1] {5}\r\nshort)\r\n",
        "* 1 FETCH (UID 7 BODY[1] {18446744073709551615}\r\n)\r\n",
        "A004 OK Fetch completed.\r\n",
    };
    for (size_t i = 0; i < sizeof cut / sizeof cut[0]; i++) {
        cr_assert_not(imap_parse_fetch(&f, cut[i], strlen(cut[i])), "%s", cut[i]);
        cr_assert_null(f.text);
    }
    /* a quoted string is a value too */
    static const char quoted[] = "* 3 FETCH (UID 12 BODY[1] \"ACK 4 \\\"ok\\\"\")\r\n";
    cr_assert(imap_parse_fetch(&f, quoted, strlen(quoted)));
    cr_assert_str_eq(f.text, "ACK 4 \"ok\"");
    imap_fetch_clear(&f);
    free(answer);
}
