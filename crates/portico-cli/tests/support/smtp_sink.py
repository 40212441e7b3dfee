"""An SMTP server for the account tests: every mail it receives is written, decoded, as one
JSON file ({"to", "subject", "text"}) in the folder given, which the tests read.

Usage: python3 smtp_sink.py FOLDER PORT   (prints "ready" once it accepts connections)
Needs aiosmtpd (Debian: python3-aiosmtpd).
"""

import email
import email.policy
import json
import os
import sys
import threading
import time

from aiosmtpd.controller import Controller


class Sink:
    def __init__(self, folder):
        self.folder = folder

    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        body = message.get_body(preferencelist=("plain",))
        html = message.get_body(preferencelist=("html",))
        record = {
            "to": envelope.rcpt_tos,
            "from": envelope.mail_from,
            "subject": str(message["subject"]),
            "text": body.get_content() if body is not None else "",
            "html": html.get_content() if html is not None else None,
        }
        name = "%d-%d.json" % (time.time_ns(), threading.get_ident())
        # Written under another ending, then renamed: a reader listing "*.json" never opens a
        # mail half written.
        tmp = os.path.join(self.folder, name + ".part")
        with open(tmp, "w") as f:
            json.dump(record, f)
        os.rename(tmp, os.path.join(self.folder, name))
        return "250 OK"


def main():
    folder, port = sys.argv[1], int(sys.argv[2])
    controller = Controller(Sink(folder), hostname="127.0.0.1", port=port)
    controller.start()
    print("ready", flush=True)
    # Runs until the test kills it (or closes stdin).
    sys.stdin.read()
    controller.stop()


if __name__ == "__main__":
    main()
