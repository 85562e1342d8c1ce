"""pygnmi (a foreign gNMI client, in its own environment) against an emulated switch's gNMI
target: Capabilities, a Get of every port's in-octets, and a STREAM subscription sampling
out-octets, of which it keeps the first ``samples`` notifications after the sync.

    python pygnmi_counters.py HOST:PORT [samples] [interval_ms]

Prints one JSON document: {"capabilities": ..., "in_octets": {path: value},
"samples": [{"timestamp": ns, "values": {path: value}}]}.
"""

from __future__ import annotations

import json
import sys

from pygnmi.client import gNMIclient

IN_OCTETS = "/interfaces/interface[name=*]/state/counters/in-octets"
OUT_OCTETS = "/interfaces/interface[name=*]/state/counters/out-octets"


def main() -> None:
    host, _, port = sys.argv[1].rpartition(":")
    wanted = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    interval_ns = int(sys.argv[3]) * 1_000_000 if len(sys.argv) > 3 else 100_000_000
    with gNMIclient(target=(host, int(port)), insecure=True, gnmi_timeout=10) as client:
        capabilities = client.capabilities()
        got = client.get(path=[IN_OCTETS], encoding="json_ietf", datatype="state")
        in_octets = {u["path"]: u["val"] for n in got["notification"] for u in n["update"]}
        subscription = client.subscribe2(subscribe={
            "mode": "stream", "encoding": "proto",
            "subscription": [{"path": OUT_OCTETS, "mode": "sample", "sample_interval": interval_ns}],
        })
        samples = []
        first = subscription.get_update(timeout=10)  # every value up to the sync_response
        samples.append(_sample(first))
        while len(samples) < wanted:
            samples.append(_sample(subscription.get_update(timeout=10)))
        subscription.close()
    json.dump({"capabilities": capabilities, "in_octets": in_octets, "samples": samples}, sys.stdout)


def _sample(response: dict) -> dict:
    update = response.get("update", {})
    return {"timestamp": update.get("timestamp", 0),
            "values": {u["path"]: u["val"] for u in update.get("update", [])}}


if __name__ == "__main__":
    main()
