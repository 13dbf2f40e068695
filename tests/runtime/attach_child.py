"""A client process of the attach test (not a test itself): a browser-like reader in another process.

Usage: python attach_child.py KIND TARGET RUN_ID AFTER
Attaches to RUN_ID in the ledger (KIND sqlite: a file; postgres: a DSN) after position AFTER and prints each
event as one JSON line (its position, type and fields) as it arrives, until Done.
"""

from __future__ import annotations

import asyncio
import json
import sys

from chainwarden.billing import Ledger, PostgresLedger, SqliteLedger
from chainwarden.runtime import AiRuntime
from chainwarden.runtime.events import encode_event


async def main(kind: str, target: str, run_id: str, after: int) -> None:
    ledger: Ledger = SqliteLedger(target) if kind == "sqlite" else PostgresLedger(target)
    with ledger, AiRuntime({}, ledger) as runtime:
        attached = runtime.attach(run_id, after=after)
        async for event in attached:
            line = {"seq": event.seq, "type": event.type, "body": json.loads(encode_event(event))}
            print(json.dumps({**line, "attempt": attached.attempt}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
