"""A multi-node Ray cluster on 127.0.0.1 for the tests: ``python tests/ray_cluster.py SPEC_JSON``.

Starts a head node and worker nodes (each its own raylet, as on separate machines) with
``ray.cluster_utils.Cluster``, all listening on loopback only, in the temp folder the spec names.
Prints one JSON line, ``{"address": "127.0.0.1:PORT", "node_ids": [...]}``, then keeps the
cluster up until its standard input closes or it is sent SIGTERM.

SPEC_JSON: ``{"temp_dir": DIR, "nodes": [{"num_cpus": 1, "num_gpus": 0, "resources": {}}, ...]}``;
the first node is the head.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading


def main(spec: dict) -> None:
    # Ray's Cluster.add_node writes the address file into the *default* Ray temp folder
    # (RAY_TMPDIR/ray, else /tmp/ray), whatever temp_dir the head got; on a fresh machine /tmp/ray
    # does not exist and the cluster fails to start. Keep that file inside the test's own folder.
    os.environ["RAY_TMPDIR"] = spec["temp_dir"]
    os.makedirs(os.path.join(spec["temp_dir"], "ray"), exist_ok=True)

    import ray.cluster_utils

    from showwork.trials.ray_setup import loopback_kept

    head, *workers = spec["nodes"]
    common = {"node_ip_address": "127.0.0.1", "include_dashboard": False}
    # As showwork's local Ray: otherwise Linux Ray replaces 127.0.0.1 by the network address and
    # the nodes listen on every interface.
    with loopback_kept():
        cluster = ray.cluster_utils.Cluster(
            initialize_head=True,
            head_node_args={**common, "temp_dir": spec["temp_dir"], **head},
            shutdown_at_exit=True,
        )
        nodes = [cluster.head_node]
        for worker in workers:
            nodes.append(cluster.add_node(node_ip_address="127.0.0.1", **worker))
    print(json.dumps({"address": cluster.address, "node_ids": [node.node_id for node in nodes]}), flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    stop.wait()
    cluster.shutdown()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
