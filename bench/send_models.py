"""How to overlap sends' waits on the network: threads, gevent greenlets, or an asyncio loop, measured.

    .venv/bin/python bench/send_models.py threads 32 sqlite 2000
    .venv/bin/python bench/send_models.py gevent 32 postgresql 2000    # needs `pip install gevent`
    .venv/bin/python bench/send_models.py asyncio 32 sqlite 2000

N webhook rows due now, each claimed, sent to a loopback receiver (a process of its own,
answering after 20 ms with keep-alive) and recorded through the real dispatch code, K at a
time, in this one process; prints rows/s and CPU per row. This is what chose the sending
threads (docs/benchmarks.md, "## Throughput"); gevent is not a dependency of Tickwork.
"""
import sys
MODEL, K, DB = sys.argv[1], int(sys.argv[2]), sys.argv[3]
N = int(sys.argv[4]) if len(sys.argv) > 4 else 2000
from pathlib import Path
if MODEL == "gevent":
    from gevent import monkey
    monkey.patch_all()
from common import make_app
import time, json, subprocess, tempfile, resource
from datetime import datetime, timedelta, timezone
import clock as B

RECEIVER = 'import sys, time\nfrom http.server import BaseHTTPRequestHandler, ThreadingHTTPServer\nDELAY = float(sys.argv[1])\nclass H(BaseHTTPRequestHandler):\n    protocol_version = "HTTP/1.1"\n    wbufsize = 65536\n    disable_nagle_algorithm = True\n    def do_POST(self):\n        self.rfile.read(int(self.headers.get("Content-Length") or 0))\n        time.sleep(DELAY)\n        body = b\'{"id": "ok"}\'\n        self.send_response(200); self.send_header("Content-Type", "application/json")\n        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)\n    def log_message(self, *a): pass\nThreadingHTTPServer.request_queue_size = 256\ns = ThreadingHTTPServer(("127.0.0.1", 0), H); s.daemon_threads = True\nprint(s.server_address[1], flush=True); s.serve_forever()\n'
from models.clock.dispatch import DispatchContext, dispatch_action, _claim_in, record_outcome
from models.core.runtime import runtime

work = Path(tempfile.mkdtemp())
recv = subprocess.Popen([sys.executable, "-c", RECEIVER, "0.02"], stdout=subprocess.PIPE, text=True)
import atexit; atexit.register(recv.kill)
port = int(recv.stdout.readline())
url = B.fresh_database(DB, B.DEFAULT_PG, work)
app = make_app(url, frozen_at=None)
ws, ch = B.workspace_with_log_channel(app, "webhook", {"url": f"http://127.0.0.1:{port}/hook"})
B.insert_rows(app, ws, ch, [datetime.now(timezone.utc) - timedelta(seconds=1)] * N)
with app.app_context():
    from sqlalchemy import select
    from models.actions.tables import ScheduledAction
    from models.core.database import read_session
    with read_session() as s:
        ids = list(s.scalars(select(ScheduledAction.id).order_by(ScheduledAction.id)))
ctx_app = app.app_context(); ctx_app.push()
from models.core.database import db
context = DispatchContext.of(runtime(), engine=db.engine)
t0 = time.monotonic(); c0 = time.process_time()
if MODEL in ("threads", "gevent"):
    if MODEL == "threads":
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(K) as pool:
            results = list(pool.map(lambda i: dispatch_action(i, context), ids))
    else:
        from gevent.pool import Pool
        results = Pool(K).map(lambda i: dispatch_action(i, context), ids)
elif MODEL == "asyncio":
    import asyncio, httpx
    from models.core.database import write_session
    from models.core.moves import Actor
    from models.channels.providers import SendResult, SendOutcome
    from models.channels.providers.webhook import body_bytes
    from models.channels.providers.base import Delivery
    actor = Actor.job("bench")
    async def one(i, client, sem):
        async with sem:
            with write_session(db.engine) as s:
                row = s.get(ScheduledAction, i)
                claimed = _claim_in(s, row, context.clock.now(), context.policy, actor)[0]
            r = await client.post(f"http://127.0.0.1:{port}/hook", content=json.dumps({"id": i}).encode(),
                                  headers={"Idempotency-Key": str(i)})
            res = SendResult.success("x") if r.status_code == 200 else SendResult(SendOutcome.UNKNOWN, "x")
            return record_outcome(claimed, "webhook", res, context, actor)
    async def main():
        sem = asyncio.Semaphore(K)
        async with httpx.AsyncClient(limits=httpx.Limits(max_connections=K)) as client:
            return await asyncio.gather(*(one(i, client, sem) for i in ids))
    results = asyncio.run(main())
el = time.monotonic() - t0; cpu = time.process_time() - c0
from collections import Counter
print(json.dumps({"model": MODEL, "k": K, "db": DB, "n": N, "secs": round(el, 2), "rate": round(N / el),
                  "cpu_ms_per_row": round(cpu / N * 1000, 2), "outcomes": dict(Counter(r.label for r in results)),
                  "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))
recv.kill(); ctx_app.pop()
B.drop_database(url, B.DEFAULT_PG)
