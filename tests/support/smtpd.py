#!/usr/bin/python3
"""A real SMTP server for wsrelay's tests (aiosmtpd), on 127.0.0.1.

It listens on a free port and writes the number to --port-file (renamed into
place, so a reader never sees half a number). Each accepted message goes to
DIR/NNN.eml, with DIR/NNN.json beside it: the envelope and the message as
Python's email package decodes it (an independent reader of what wsrelay
wrote). A message refused by --fail-first goes to DIR/refused/NNN.eml.
DIR/log gets one line per event: CONNECT, EHLO, STARTTLS, SNI, AUTH, MAIL,
RCPT, DATA. Runs until SIGTERM.

Options:
  --tls-cert FILE --tls-key FILE  offer STARTTLS with this certificate
  --require-starttls              refuse everything but EHLO/STARTTLS before TLS
  --auth USER:PASS                offer AUTH PLAIN and LOGIN (after TLS when TLS
                                  is offered) and require it for MAIL
  --auth-mech MECH                with --auth: offer only PLAIN or only LOGIN
  --auth-optional                 with --auth: accept mail without AUTH too
  --auth-echo                     with --auth: a failed AUTH's reply quotes the
                                  password it got, plain and in base64 (a
                                  careless server, for redaction tests)
  --auth-echo-cut CUT             with --auth: a failed AUTH's reply quotes a
                                  part of the password: "first" drops its first
                                  3 characters, "last" its last 3, "middle" both
  --fail-first N REPLY            answer the first N DATA with REPLY, e.g.
                                  "451 4.3.0 try again"
  --refuse ADDR                   answer RCPT TO:<ADDR> with 550 5.1.1 (repeatable)
"""
import argparse
import asyncio
import base64
import email
import email.policy
import json
import os
import signal
import ssl
import sys

from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword


class Recorder:
    def __init__(self, args):
        self.args = args
        self.dir = args.dir
        self.data_count = 0
        self.accepted = 0
        self.refused = 0
        os.makedirs(os.path.join(self.dir, "refused"), exist_ok=True)

    def log(self, line):
        with open(os.path.join(self.dir, "log"), "a", encoding="utf-8") as f:
            f.write(line + "\n")

    async def handle_EHLO(self, server, session, envelope, hostname, responses):
        self.log("EHLO tls=%s" % ("yes" if session.ssl else "no"))
        session.host_name = hostname
        return responses

    async def handle_MAIL(self, server, session, envelope, address, mail_options):
        self.log("MAIL %s auth=%s" % (address, "yes" if session.authenticated else "no"))
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 OK"

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.lower() in self.args.refuse:
            self.log("RCPT %s refused" % address)
            return "550 5.1.1 no such user"
        self.log("RCPT %s" % address)
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(rcpt_options)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        self.data_count += 1
        data = envelope.original_content or b""
        if self.data_count <= self.args.fail_first[0]:
            self.refused += 1
            write(os.path.join(self.dir, "refused", "%03d.eml" % self.refused), data)
            self.log("DATA refused")
            return self.args.fail_first[1]
        self.accepted += 1
        base = os.path.join(self.dir, "%03d" % self.accepted)
        msg = email.message_from_bytes(data, policy=email.policy.default)
        write(base + ".json", json.dumps(describe(envelope, session, msg), ensure_ascii=False,
                                         indent=1).encode("utf-8"))
        write(base + ".eml", data)  # last: a test waits for the .eml
        self.log("DATA accepted")
        return "250 2.0.0 OK queued"


def write(path, data):
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.rename(path + ".tmp", path)


def describe(envelope, session, msg):
    """The message as a mail client would show it."""
    parts = []
    for part in msg.walk():
        if part.is_multipart():
            continue
        body = part.get_content()
        described = {
            "type": part.get_content_type(),
            "charset": part.get_content_charset(),
            "cte": part["Content-Transfer-Encoding"],
        }
        if isinstance(body, bytes):
            # An image: its bytes in hex, and where and how it is shown.
            described.update({
                "body": None,
                "hex": body.hex(),
                "size": len(body),
                "content_id": part["Content-ID"],
                "disposition": part.get_content_disposition(),
                "filename": part.get_filename(),
            })
        else:
            described["body"] = body.replace("\r\n", "\n")
        parts.append(described)
    headers = {}
    for name, value in msg.items():
        headers.setdefault(name.lower(), []).append(str(value))
    return {
        "mail_from": envelope.mail_from,
        "rcpt_tos": envelope.rcpt_tos,
        "tls": bool(session.ssl),
        "authenticated": bool(session.authenticated),
        "content_type": msg.get_content_type(),
        "subject": str(msg["subject"]),
        "headers": headers,
        "parts": parts,
        "defects": [type(d).__name__ for p in msg.walk() for d in p.defects],
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--require-starttls", action="store_true")
    ap.add_argument("--auth")
    ap.add_argument("--auth-mech", choices=["PLAIN", "LOGIN"])
    ap.add_argument("--auth-optional", action="store_true")
    ap.add_argument("--auth-echo", action="store_true")
    ap.add_argument("--auth-echo-cut", choices=["first", "last", "middle"])
    ap.add_argument("--fail-first", nargs=2, default=[0, ""])
    ap.add_argument("--refuse", action="append", default=[])
    args = ap.parse_args()
    args.fail_first = [int(args.fail_first[0]), args.fail_first[1]]
    args.refuse = [a.lower() for a in args.refuse]
    os.makedirs(args.dir, exist_ok=True)
    recorder = Recorder(args)

    tls = None
    if args.tls_cert:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(args.tls_cert, args.tls_key)

        def on_sni(sock, name, ctx):
            recorder.log("SNI %s" % name)
        tls.sni_callback = on_sni

    authenticator = None
    if args.auth:
        user, password = args.auth.split(":", 1)

        def authenticator(server, session, envelope, mechanism, data):
            ok = (isinstance(data, LoginPassword) and data.login == user.encode()
                  and data.password == password.encode())
            recorder.log("AUTH %s %s" % (mechanism, "ok" if ok else "failed"))
            message = None
            if not ok and args.auth_echo and isinstance(data, LoginPassword):
                got = data.password.decode("utf-8", "replace")
                message = "535 5.7.8 wrong password %s (%s)" % (
                    got, base64.b64encode(data.password).decode())
            if not ok and args.auth_echo_cut and isinstance(data, LoginPassword):
                got = data.password.decode("utf-8", "replace")
                part = {"first": got[3:], "last": got[:-3], "middle": got[3:-3]}
                message = "535 5.7.8 no user with password <%s>" % part[args.auth_echo_cut]
            return AuthResult(success=ok, handled=False, message=message)

    excluded = [m for m in ("PLAIN", "LOGIN") if args.auth_mech and m != args.auth_mech]
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)

    def factory():
        recorder.log("CONNECT")
        return SMTP(recorder, hostname="localhost", tls_context=tls,
                    require_starttls=args.require_starttls,
                    authenticator=authenticator,
                    auth_required=bool(args.auth) and not args.auth_optional,
                    auth_require_tls=tls is not None, auth_exclude_mechanism=excluded,
                    loop=loop)

    server = loop.run_until_complete(loop.create_server(factory, "127.0.0.1", 0))
    port = server.sockets[0].getsockname()[1]
    # The handler comes before the port file: a test may stop the server as
    # soon as it knows the port, and a SIGTERM without it would end the
    # server with status 143, which smtpd_stop reports as a warning.
    loop.add_signal_handler(signal.SIGTERM, loop.stop)
    with open(args.port_file + ".tmp", "w") as f:
        f.write("%d\n" % port)
    os.rename(args.port_file + ".tmp", args.port_file)
    loop.run_forever()
    server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
