"""What the egress policy costs a send: a request through the checked transport against plain httpx.

    .venv/bin/python bench/egress.py [REQUESTS]

A loopback receiver (a process of its own) answers POSTs at once. Each round makes REQUESTS
(default 200) POSTs with a new connection each (``Connection: close``: the policy resolves and
checks on every connection, so this is its worst case), by name (``localhost``) and by address,
then the same over one kept-alive connection (what a channel's pooled client does), through
``httpx.Client(trust_env=False)`` and through ``egress_client()``, rounds interleaved; the median
of 7 rounds, per request. Writes the "Egress policy" section of docs/benchmarks.md.
"""

from common import machine, write_section

import statistics
import subprocess
import sys
import time

import httpx

from models.core import egress

RECEIVER = ('from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer\n'
            'class H(BaseHTTPRequestHandler):\n    protocol_version = "HTTP/1.1"\n    wbufsize = 65536\n'
            '    disable_nagle_algorithm = True\n'
            '    def do_POST(self):\n        self.rfile.read(int(self.headers.get("Content-Length") or 0))\n'
            '        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers()\n'
            '        self.wfile.write(b"ok")\n    def log_message(self, *a): pass\n'
            's = ThreadingHTTPServer(("127.0.0.1", 0), H); s.daemon_threads = True\n'
            'print(s.server_address[1], flush=True); s.serve_forever()\n')
REQUESTS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
ROUNDS = 7


def per_request_ms(client: httpx.Client, url: str, headers: dict) -> float:
    started = time.perf_counter()
    for _ in range(REQUESTS):
        assert client.post(url, content=b"{}", headers=headers).status_code == 200
    return (time.perf_counter() - started) * 1000 / REQUESTS


def main() -> None:
    egress.configure("127.0.0.0/8,localhost")
    receiver = subprocess.Popen([sys.executable, "-c", RECEIVER], stdout=subprocess.PIPE, text=True)
    try:
        port = int(receiver.stdout.readline())
        cases = [("new connection each, by name", f"http://localhost:{port}/", {"Connection": "close"}),
                 ("new connection each, by address", f"http://127.0.0.1:{port}/", {"Connection": "close"}),
                 ("kept-alive connection", f"http://127.0.0.1:{port}/", {})]
        rows = []
        for label, url, headers in cases:
            samples = {"plain": [], "egress": []}
            with httpx.Client(trust_env=False, timeout=10) as plain, egress.egress_client(timeout=10) as checked:
                for _ in range(ROUNDS):
                    samples["plain"].append(per_request_ms(plain, url, headers))
                    samples["egress"].append(per_request_ms(checked, url, headers))
            plain_ms, egress_ms = statistics.median(samples["plain"]), statistics.median(samples["egress"])
            rows.append(f"| {label} | {plain_ms:.3f} ms | {egress_ms:.3f} ms | {egress_ms / plain_ms:.2f}x |")
            print(rows[-1], flush=True)
    finally:
        receiver.kill()
    write_section("Egress policy", f"""
`bench/egress.py`: a POST to a loopback receiver through plain `httpx.Client(trust_env=False)` and
through `egress_client()` (the checked transport every provider uses), {REQUESTS} requests per
round, rounds interleaved, median of {ROUNDS}, per request. A new connection is the policy's worst
case (the name is resolved and every address checked before connecting); a channel's pooled
client keeps its connections alive, so a send usually pays nothing. Machine: {machine()}, shared
and busy (load average about 20 when measured), so read the ratio: the check (a resolver call that
httpx would have made anyway, and a few table lookups) is within the run-to-run noise here.

| case | plain httpx | egress client | ratio |
|---|---|---|---|
{chr(10).join(rows)}
""")


if __name__ == "__main__":
    main()
