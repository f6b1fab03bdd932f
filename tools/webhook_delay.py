"""How long one client's webhook waits behind ten aimed at a receiver that never answers (a measurement).

`python -m tools.webhook_delay`: the dispatcher with the default 5 s timeout, driven
every 0.25 s as the ticket service drives it. Run under `flock /tmp/lab-cpu.lock`.
"""

import argparse
import asyncio
import base64
import time

from app.jobs.in_memory import MemoryJobStore
from app.jobs.webhooks import WebhookDispatcher, WebhookSigner
from kit.webhook_receiver import done_job, silent_receiver, webhook_receiver

SECRET = "whsec_" + base64.b64encode(b"review-lab-measure-secret-32byte").decode()
SLOW_JOBS = 10
POLL_S = 0.25


async def measure() -> float:
    store = MemoryJobStore()
    async with silent_receiver() as slow, webhook_receiver() as fast:
        for i in range(SLOW_JOBS):
            await store.add(done_job(slow.url, i))
        await store.add(done_job(fast.url, SLOW_JOBS))
        dispatcher = WebhookDispatcher(
            store, WebhookSigner(SECRET), model="m", allow_private=True, max_attempts=5, backoff_s=1.0, timeout_s=5.0
        )

        async def drive() -> None:
            while True:
                await dispatcher.deliver_due()
                await asyncio.sleep(POLL_S)

        started = time.monotonic()
        driver = asyncio.create_task(drive())
        await fast.wait_for(1, limit_s=300)
        waited = time.monotonic() - started
        driver.cancel()
        await asyncio.gather(driver, return_exceptions=True)
        await dispatcher.close()
    return waited


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    print(f"fast receiver's webhook arrived {asyncio.run(measure()):.3f} s after delivery began ({SLOW_JOBS} ahead)")


if __name__ == "__main__":
    main()
