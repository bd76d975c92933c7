#!/usr/bin/python3
"""An SMTP server that misbehaves on purpose, for wsrelay's fault tests.

Standard library only. It listens on 127.0.0.1 and a free port, writes the
number to --port-file (renamed into place), and plays one --mode with every
client:

  drip-greeting  the greeting never ends: a "220-" line every --drip-ms
  drip-ehlo      a normal greeting; the reply to EHLO never ends: a "250-"
                 line every --drip-ms
  drip-body      a normal session up to the end of the message; the reply to
                 the final "." never ends: a "250-" line every --drip-ms
  drip-quit      takes the message ("250 2.0.0 OK queued"); the reply to QUIT
                 never ends: a "221-" line every --drip-ms
  close          closes the connection right after the greeting
  close-data     closes the connection in the middle of the message, after
                 its first line
  refuse         answers the greeting with 421 and closes
  refuse-rcpt    a normal session, but every RCPT gets 550 5.1.1

DIR/log gets one line per event (CONNECT, EHLO, MAIL, RCPT, DATA, BODY,
DRIP, CLOSE, ...), so that a test can see how far a client went.

It is bounded: it exits after --lifetime seconds (default 120), on SIGTERM,
and when the process that started it is gone; a client that says nothing
for 30 s is dropped.
"""
import argparse
import os
import signal
import socket
import sys
import threading
import time

IDLE_S = 30


class Client:
    def __init__(self, args, conn, log):
        self.args = args
        self.conn = conn
        self.log = log
        self.pending = b""

    def send(self, line):
        self.conn.sendall(line.encode("ascii") + b"\r\n")

    def readline(self):
        """One line without its line end, or None when the client is gone."""
        while b"\n" not in self.pending:
            try:
                data = self.conn.recv(4096)
            except OSError:
                return None
            if not data:
                return None
            self.pending += data
        line, self.pending = self.pending.split(b"\n", 1)
        return line.rstrip(b"\r").decode("utf-8", "replace")

    def drip(self, code, what):
        """A multi-line reply that never ends, one line every --drip-ms. The
        lines are short: libESMTP gives up on a reply longer than 4 KiB, which
        at 5 bytes a line takes 800 lines."""
        self.log("DRIP %s" % what)
        while True:
            self.send("%s-wait" % code)
            time.sleep(self.args.drip_ms / 1000.0)

    def run(self):
        mode = self.args.mode
        self.log("CONNECT")
        if mode == "drip-greeting":
            self.drip("220", "greeting")
        if mode == "refuse":
            self.send("421 4.3.2 service not available, closing channel")
            return
        self.send("220 localhost ESMTP broken test server")
        if mode == "close":
            return
        while True:
            line = self.readline()
            if line is None:
                return
            verb = line.split(" ", 1)[0].upper()
            self.log(verb if verb != "RCPT" else "RCPT " + line[8:].strip())
            if verb == "EHLO":
                if mode == "drip-ehlo":
                    self.drip("250", "ehlo")
                self.send("250-localhost")
                self.send("250 8BITMIME")
            elif verb == "HELO":
                self.send("250 localhost")
            elif verb == "MAIL":
                self.send("250 2.1.0 OK")
            elif verb == "RCPT":
                if mode == "refuse-rcpt":
                    self.send("550 5.1.1 no such user")
                else:
                    self.send("250 2.1.5 OK")
            elif verb == "DATA":
                self.send("354 end data with <CR><LF>.<CR><LF>")
                if not self.body():
                    return
                if mode == "drip-body":
                    self.drip("250", "body")
                self.send("250 2.0.0 OK queued")
            elif verb == "RSET" or verb == "NOOP":
                self.send("250 OK")
            elif verb == "QUIT":
                if mode == "drip-quit":
                    self.drip("221", "quit")
                self.send("221 bye")
                return
            else:
                self.send("502 5.5.2 command not implemented")

    def body(self):
        """Reads the message up to its final "."; False when the client is
        gone or the mode closes here."""
        first = True
        while True:
            line = self.readline()
            if line is None:
                return False
            if first and self.args.mode == "close-data":
                self.log("BODY closed after the first line")
                return False
            first = False
            if line == ".":
                self.log("BODY")
                return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--mode", required=True,
                    choices=["drip-greeting", "drip-ehlo", "drip-body", "drip-quit", "close",
                             "close-data", "refuse", "refuse-rcpt"])
    ap.add_argument("--drip-ms", type=int, default=5000)
    ap.add_argument("--lifetime", type=float, default=120)
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    lock = threading.Lock()

    def log(line):
        with lock, open(os.path.join(args.dir, "log"), "a", encoding="utf-8") as f:
            f.write(line + "\n")

    parent = os.getppid()
    deadline = time.monotonic() + args.lifetime
    signal.signal(signal.SIGTERM, lambda sig, frame: os._exit(0))

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    with open(args.port_file + ".tmp", "w") as f:
        f.write("%d\n" % port)
    os.rename(args.port_file + ".tmp", args.port_file)

    def serve(conn):
        conn.settimeout(IDLE_S)
        try:
            Client(args, conn, log).run()
        except OSError:
            pass  # the client went away while a reply was written
        finally:
            log("CLOSE")
            conn.close()

    while time.monotonic() < deadline and os.getppid() == parent:
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            continue
        threading.Thread(target=serve, args=(conn,), daemon=True).start()
    # Daemon threads (a drip in progress) end with the process.
    return 0


if __name__ == "__main__":
    sys.stdout.flush()
    os._exit(main())
