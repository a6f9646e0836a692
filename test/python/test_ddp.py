# SPDX-License-Identifier: BSD-3-Clause
"""gcoll.torch's DDP communication hooks in training, under mpirun (run by
test/python/run_ddp.sh at 4 ranks as 2 simulated nodes, GCOLL_NODE_SIZE=2).

Trains examples/ddp_compressed.py's MLP for 200 steps with DDP's own gloo
allreduce (no hook) and with each gcoll hook, from the same model and data,
in two DDP buckets (--small-buckets), and checks:
- exact_hook's loss equals DDP's default at every step, within float
  rounding (relative 1e-4: the sums are ordered differently);
- after 200 steps the topk and onebit hooks' losses are within 10% of the
  exact hook's (and bf16's within 1%), and every hook brought the loss down
  to under a tenth of the first step's;
- the warm-up: the first two iterations are exact, so the compressed hooks'
  losses at steps 1-3 are exact_hook's, bit for bit; later ones differ;
- one compressor per bucket index, sized to its bucket (the sizes add up to
  the model's parameters), exact allreduces in the first 2 iterations (DDP
  rebuilds its buckets after the first), 198 compressed ones per bucket after;
- every rank ends with the same parameters, bit for bit;
- topk and onebit send under a quarter of exact's inter-node bytes (libgcoll's
  counters, gcoll.Comm.stats(); default sends none through libgcoll);
- GcollState refuses a warm-up under 2 iterations.

Prints the final losses and "test_ddp: N ranks: ok (K checks)", exit 0; or
the failures, exit 1.  Without torch it says so and exits 77 (SKIP)."""
import os
import sys

try:
    import torch  # noqa: F401
except ImportError as e:
    print(f"SKIP: test_ddp needs PyTorch, which this python ({sys.executable}) cannot import "
          f"({e}); see test/python/run_ddp.sh for how to install it")
    sys.exit(77)

from mpi4py import MPI

import importlib.util

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "ddp_compressed", os.path.join(here, "..", "..", "examples", "ddp_compressed.py"))
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)

import gcoll             # noqa: E402
import gcoll.torch as gtorch   # noqa: E402
import torch.distributed as dist  # noqa: E402

WORLD = MPI.COMM_WORLD
STEPS = 200
failures = []
checks = 0


def check(ok, what):
    global checks
    checks += 1
    if not ok:
        failures.append(what)


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-30)


def main():
    # TEST_DDP_ARGS: more options of the example (e.g. "--momentum 0.9" to see it fail)
    args = example.parser().parse_args(["--steps", str(STEPS), "--small-buckets"] +
                                       os.environ.get("TEST_DDP_ARGS", "").split())
    args.bucket_cap_mb = 0.0005
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    example.init_process_group(None, WORLD)
    res = {}
    with gcoll.Comm(WORLD) as comm:
        inter = {}    # inter-node bytes that libgcoll sent, summed over ranks, per hook
        for hook in example.ALL_HOOKS:
            before = comm.stats()["bytes_sent_inter_node"]
            res[hook] = example.train(hook, args, comm, WORLD)
            inter[hook] = WORLD.allreduce(comm.stats()["bytes_sent_inter_node"] - before)
        try:
            gtorch.GcollState(comm, warmup_iters=1)
            check(False, "GcollState(warmup_iters=1) was accepted")
        except ValueError:
            check(True, "")
    dist.destroy_process_group()

    exact, default = res["exact"], res["default"]
    worst = max(rel(a, b) for a, b in zip(exact["losses"], default["losses"]))
    check(worst <= 1e-4 and rel(exact["final"], default["final"]) <= 1e-4,
          f"exact hook vs DDP's default: losses differ by up to {worst:.2e} (relative; "
          f"final {exact['final']:.6f} vs {default['final']:.6f})")
    first = default["losses"][0]
    for hook, r in res.items():
        check(len(r["losses"]) == STEPS, f"{hook}: {len(r['losses'])} losses, not {STEPS}")
        check(r["final"] < first / 10,
              f"{hook}: loss {r['final']:.6f} after {STEPS} steps, from {first:.6f}")
        digests = WORLD.allgather(r["params"])
        check(len(set(digests)) == 1, f"{hook}: the ranks' parameters differ at the end")
    for hook, tol in (("bf16", 0.01), ("topk", 0.10), ("onebit", 0.10)):
        r = res[hook]
        check(rel(r["final"], exact["final"]) <= tol,
              f"{hook}: loss {r['final']:.6f} after {STEPS} steps, "
              f"{r['final'] / exact['final'] - 1:+.1%} from exact's {exact['final']:.6f} "
              f"(allowed {tol:.0%})")
        warm = r["losses"][:args.warmup + 1]
        check(warm == exact["losses"][:args.warmup + 1],
              f"{hook}: losses at steps 1-{args.warmup + 1} {warm} are not exact's "
              f"{exact['losses'][:args.warmup + 1]} (warm-up)")
        if hook != "bf16":   # bf16 may happen to round a step's gradient to exact's
            check(r["losses"][args.warmup + 1] != exact["losses"][args.warmup + 1],
                  f"{hook}: loss at step {args.warmup + 2} equals exact's: not compressed?")
        f = r["facts"]
        sizes = f["buckets"]
        check(len(sizes) >= 2 and sorted(sizes) == list(range(len(sizes))),
              f"{hook}: compressors for buckets {sorted(sizes)}, expected 0..n-1 with n >= 2")
        check(sum(sizes.values()) == r["nparams"],
              f"{hook}: compressor sizes {sizes} do not add up to {r['nparams']} parameters")
        n = len(sizes)
        # iteration 1 has DDP's first bucketing (here one bucket of every
        # parameter), rebuilt into the n buckets from iteration 2 on
        check(args.warmup <= f["calls"]["exact"] <= args.warmup * n
              and f["calls"]["compressed"] == (STEPS - args.warmup) * n and f["iters"] == STEPS,
              f"{hook}: allreduces {f['calls']} over {f['iters']} iterations, expected "
              f"{args.warmup}-{args.warmup * n} exact and {(STEPS - args.warmup) * n} compressed "
              f"over {STEPS}")
    for hook in ("topk", "onebit"):
        check(inter[hook] * 4 < inter["exact"],
              f"{hook}: {inter[hook]} inter-node bytes, not under a quarter of exact's "
              f"{inter['exact']}")
    f = res["exact"]["facts"]
    check(f["buckets"] == {} and f["calls"]["compressed"] == 0 and f["calls"]["exact"] > 0,
          f"exact hook: {f}")

    all_failures = WORLD.gather(failures, root=0)
    total = WORLD.allreduce(len(failures))
    if WORLD.rank == 0:
        print(f"losses after {STEPS} steps at {WORLD.size} ranks "
              f"(GCOLL_NODE_SIZE={os.environ.get('GCOLL_NODE_SIZE', '')}):")
        for hook, r in res.items():
            print(f"  {hook:8s} {r['final']:.6f}  {r['final'] / exact['final'] - 1:+.2%} vs exact"
                  f"  ({r['seconds']:.1f} s, {inter[hook]} inter-node bytes by libgcoll)")
        ranks = {}    # failure -> the ranks that saw it
        for rank, fl in enumerate(all_failures):
            for msg in fl:
                ranks.setdefault(msg, []).append(rank)
        for msg, rs in ranks.items():
            print(f"FAIL (rank{'s' if len(rs) > 1 else ''} {','.join(map(str, rs))}): {msg}")
        if total == 0:
            print(f"test_ddp: {WORLD.size} ranks: ok ({checks} checks)")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
