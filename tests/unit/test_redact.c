/* util/redact: every form in which a far end can echo a configured secret
 * (whole, in parts, escaped for JSON, URLs or HTML, cut short) comes out
 * as "[redacted]", and ordinary words around it stay. */
#include "util/redact.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct redact *R;

static void teardown(void)
{
    redact_free(R);
    R = NULL;
}

TestSuite(redact, .fini = teardown);

static void check(const char *text, const char *want)
{
    char *got = redact_text(R, text);
    cr_assert_str_eq(got, want, "in:  %s\nout: %s\nwant: %s", text, got, want);
    free(got);
}

#define SLACK "https://hooks.slack.com/services/T0AB12CD3/B0EF45GH6/XkqPzRtwLm9aBcDeFgHiJkLm"

Test(redact, a_slack_url_whole_in_parts_and_escaped)
{
    R = redact_new();
    redact_add_url(R, SLACK);
    check("Cannot POST " SLACK "!", "Cannot POST [redacted]!");
    check("Cannot POST /services/T0AB12CD3/B0EF45GH6/XkqPzRtwLm9aBcDeFgHiJkLm",
          "Cannot POST [redacted]");
    check("no_service: XkqPzRtwLm9aBcDeFgHiJkLm", "no_service: [redacted]");
    check("team T0AB12CD3 channel B0EF45GH6", "team [redacted] channel [redacted]");
    check("{\"url\":\"https:\\/\\/hooks.slack.com\\/services\\/T0AB12CD3\\/B0EF45GH6\\/"
          "XkqPzRtwLm9aBcDeFgHiJkLm\"}",
          "{\"url\":\"[redacted]\"}");
    check("path \\/services\\/T0AB12CD3\\/B0EF45GH6\\/XkqPzRtwLm9aBcDeFgHiJkLm end",
          "path [redacted] end");
    check("path %2Fservices%2FT0AB12CD3%2FB0EF45GH6%2FXkqPzRtwLm9aBcDeFgHiJkLm end",
          "path [redacted] end");
    check("path %2fservices%2fT0AB12CD3%2fB0EF45GH6%2fXkqPzRtwLm9aBcDeFgHiJkLm end",
          "path [redacted] end");
    check("https%3A%2F%2Fhooks.slack.com%2Fservices%2FT0AB12CD3%2FB0EF45GH6%2F"
          "XkqPzRtwLm9aBcDeFgHiJkLm",
          "[redacted]");
    check("\\u0058kqPzRtwLm9aBcDeFgHiJkL\\u006d", "[redacted]");
    check("%58%6b%71%50%7a%52%74%77%4c%6d%39%61%42%63%44%65%46%67%48%69%4a%6b%4c%6d", "[redacted]");
    check("%2558kqPzRtwLm9aBcDeFgHiJkLm and &#88;kqPzRtwLm9aBcDeFgHiJk&#x4C;m",
          "[redacted] and [redacted]");
    /* Ordinary words of the URL stay readable. */
    check("the services of hooks.slack.com are down", "the services of hooks.slack.com are down");
}

#define TEAMS                                                                                      \
    "https://prod-12.westus.logic.azure.com:443/workflows/0123456789abcdef0123456789abcdef/"       \
    "triggers/manual/paths/invoke?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&"    \
    "sig=AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCd"

Test(redact, a_teams_url_signature_and_workflow_alone)
{
    R = redact_new();
    redact_add_url(R, TEAMS);
    check("bad sig AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCd", "bad sig [redacted]");
    check("bad sig AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\\u002d_AbCd", "bad sig [redacted]");
    check("(AbCdEfGhIjKlMnOpQrStUvWxYz0123456789%2D_AbCd)", "([redacted])");
    check("workflow 0123456789abcdef0123456789abcdef not found", "workflow [redacted] not found");
    check("/workflows/0123456789abcdef0123456789abcdef/triggers/manual/paths/invoke", "[redacted]");
    check("The workflow's manual trigger failed to invoke",
          "The workflow's manual trigger failed to invoke");
}

Test(redact, a_webhook_with_a_query_token_and_a_bearer_header)
{
    R = redact_new();
    redact_add_url(R, "https://alerts.example.org/hook?token=Qy7SeCrEt5mKp&format=json");
    redact_add_header(R, "Bearer Bz8SeCrEt3xLw");
    redact_add_header(R, "abcd-1234-efgh");
    check("unknown token Qy7SeCrEt5mKp", "unknown token [redacted]");
    check("query: token=Qy7SeCrEt5mKp&format=json", "query: [redacted]");
    check("query: token%3DQy7SeCrEt5mKp%26format%3Djson", "query: [redacted]");
    check("Authorization: Bearer Bz8SeCrEt3xLw", "Authorization: [redacted]");
    check("invalid bearer Bz8SeCrEt3xLw.", "invalid bearer [redacted].");
    check("key abcd-1234-efgh rejected", "key [redacted] rejected");
    check("format json is fine", "format json is fine");
}

Test(redact, a_short_bearer_token_is_still_a_secret)
{
    R = redact_new();
    redact_add_header(R, "Bearer t0kn");
    check("token t0kn expired", "token [redacted] expired");
    check("Bearer", "Bearer");
}

Test(redact, userinfo_and_its_password)
{
    R = redact_new();
    redact_add_url(R, "https://relay:pw-4sure@example.org/in");
    check("login relay:pw-4sure failed", "login [redacted] failed");
    check("password pw-4sure", "password [redacted]");
    check("user relay", "user relay");
}

Test(redact, a_token_configured_with_escapes_in_any_spelling)
{
    R = redact_new();
    redact_add_url(R, "https://example.org/hook/esc%2Bs3cr3t%2FZ9q");
    check("esc%2Bs3cr3t%2FZ9q", "[redacted]");
    check("got esc+s3cr3t/Z9q", "got [redacted]");
    check("got esc%2bs3cr3t%2fZ9q", "got [redacted]");
    check("got esc+s3cr3t\\/Z9q", "got [redacted]");
}

Test(redact, twice_adjacent_and_overlapping)
{
    R = redact_new();
    redact_add(R, "Tok3nAAAA");
    redact_add(R, "AAAAB4bb");
    check("a Tok3nAAAA b Tok3nAAAA c", "a [redacted] b [redacted] c");
    check("Tok3nAAAATok3nAAAA", "[redacted]");
    check("x Tok3nAAAAB4bb y", "x [redacted] y");
    redact_add(R, "aXaXaX1");
    check("aXaXaXaX1!", "aX[redacted]!");
}

Test(redact, a_secret_cut_at_the_end_of_a_text)
{
    R = redact_new();
    redact_add(R, "Zq81-secret-value");
    check("error: Zq81-secr", "error: [redacted]");
    check("error: Zq81-se", "error: Zq81-se");                        /* 7 bytes: too few to tell */
    check("error: Zq81-secr and more", "error: [redacted] and more"); /* 8 bytes in a row */
}

/* A far end that quotes a password or token without some of its characters
 * still gives most of it away: any 8 of its bytes in a row are caught, in
 * every form a whole secret is. */
Test(redact, any_eight_bytes_in_a_row_of_a_password_or_token)
{
    R = redact_new();
    redact_add(R, "Pw7-qZ93xLm2Rt8vKd4");
    check("535 5.7.8 bad credentials -qZ93xLm2Rt8vKd4 for relay",
          "535 5.7.8 bad credentials [redacted] for relay");
    check("535 5.7.8 bad credentials Pw7-qZ93xLm2Rt8v for relay",
          "535 5.7.8 bad credentials [redacted] for relay");
    check("535 5.7.8 bad credentials <93xLm2Rt8> for relay",
          "535 5.7.8 bad credentials <[redacted]> for relay");
    check("quoted \"93xLm2Rt\\u0038v\"", "quoted \"[redacted]\"");
    check("pct 93%78Lm2Rt8", "pct [redacted]");
    check("seven 93xLm2R only", "seven 93xLm2R only");
    redact_add_header(R, "Bearer eyJhbGciOi.Jz9Kq8WmXr2Tp4Vn6");
    redact_add_url(R, "https://hooks.example.org/in/Hq4TmZ8wPx2KvR6n?key=Ab12Cd34Ef56Gh78");
    check("403 token ZWmXr2Tp4Vn6 revoked", "403 token Z[redacted] revoked");
    check("403 unknown hook TmZ8wPx2KvR6n", "403 unknown hook [redacted]");
    check("403 key=…Cd34Ef56Gh78 denied", "403 key=…[redacted] denied");
    /* Words of the URL and of the header stay, whatever their length. */
    check("hooks.example.org says Bearer tokens expire",
          "hooks.example.org says Bearer tokens expire");
}

/* Only the password and the real tokens of a URL count with their runs: a
 * user name that is an address, a date and a path of words are looked for
 * whole, so that the host and the words of messages stay. */
Test(redact, runs_of_the_password_and_tokens_not_of_addresses_dates_and_paths)
{
    R = redact_new();
    redact_add_url(R, "https://alerts%40example.com:Pw7-qZ93xLm2@hooks.example.com/in");
    redact_add_url(R, TEAMS);
    check("POST https://hooks.example.com/in: 503", "POST https://hooks.example.com/in: 503");
    check("user alerts@example.com unknown", "user alerts@example.com unknown");
    check("login alerts@example.com:Pw7-qZ93xLm2 failed", "login [redacted] failed");
    check("bad password 7-qZ93xLm", "bad password [redacted]");
    check("no trigger at /triggers/manual/run", "no trigger at /triggers/manual/run");
    check("api-version 2016-06-01 is retired", "api-version 2016-06-01 is retired");
    check("bad sig …fGhIjKlMnOpQ…", "bad sig …[redacted]…");
}

Test(redact, a_userinfo_in_base64_as_basic_authentication_sends_it)
{
    R = redact_new();
    redact_add_url(R, "https://relay:Sx9-pw-Lq2z@example.org/in");
    /* base64("relay:Sx9-pw-Lq2z") is cmVsYXk6U3g5LXB3LUxxMno= */
    check("got Authorization: Basic cmVsYXk6U3g5LXB3LUxxMno=",
          "got Authorization: Basic [redacted]");
    check("got LXB3LUxxMno", "got [redacted]");
}

/* However many secrets and however long the text, redaction reads it a
 * bounded number of times: 64 KiB made only of near misses against 20
 * secrets is done long before the hang guard. */
Test(redact, a_long_text_against_many_secrets, .timeout = 20)
{
    R = redact_new();
    char secret[64];
    for (int i = 0; i < 20; i++) {
        snprintf(secret, sizeof secret, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa%02dbbbbbbbbbbbbbbbbbbbbbbb",
                 i);
        redact_add(R, secret);
        snprintf(secret, sizeof secret, "https://example.org/aaaaaaaaaaaaaaaaaaaaaaaaaa%02dc", i);
        redact_add_url(R, secret);
    }
    size_t n = 64 * 1024;
    char *text = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        text[i] = 'a';
    text[n] = '\0';
    char *got = redact_text(R, text);
    cr_assert_str_eq(got, "[redacted]"); /* "aaaaaaaa" is a run of each secret */
    free(got);
    for (size_t i = 0; i < n; i++)
        text[i] = "ab%25"[i % 5];
    got = redact_text(R, text);
    cr_assert_eq(strlen(got), n);
    free(got);
    free(text);
}

Test(redact, non_ascii_secrets_escaped_as_code_points_or_bytes)
{
    R = redact_new();
    redact_add(R, "pässwörd1");
    redact_add(R, "key😀1234");
    check("pw p\\u00e4ssw\\u00F6rd1", "pw [redacted]");
    check("pw p%C3%A4ssw%c3%b6rd1", "pw [redacted]");
    check("pw p&#228;ssw&#xf6;rd1", "pw [redacted]");
    check("k key\\ud83d\\ude001234", "k [redacted]");
    check("k key\\ud83d1234", "k key\\ud83d1234"); /* a lone surrogate is not a character */
}

Test(redact, short_secrets_and_empty_sets_change_nothing)
{
    R = redact_new();
    redact_add(R, "abc");
    redact_add(R, NULL);
    redact_add_url(R, NULL);
    redact_add_header(R, NULL);
    check("abc abc", "abc abc");
    char *copy = redact_text(NULL, "text");
    cr_assert_str_eq(copy, "text");
    free(copy);
    redact_add_url(R, "http://127.0.0.1:8080");
    check("POST http://127.0.0.1:8080: refused", "POST http://127.0.0.1:8080: refused");
    check("", "");
}

Test(redact, what_could_be_a_token)
{
    static const char *const tokens[] = {
        "T0AB12CD3", "2016-06-01", "XkqPzRtwLm", "SECRET", "abcdefghijklmnopqrstu",
        "a/b/c/d",   NULL};
    static const char *const words[] = {"services", "workflows", "api-version",
                                        "Bearer",   "triggers",  "hook",
                                        "abc12",    "json",      NULL};
    for (const char *const *t = tokens; *t; t++)
        cr_assert(redact_is_token(*t), "%s", *t);
    for (const char *const *w = words; *w; w++)
        cr_assert_not(redact_is_token(*w), "%s", *w);
}
