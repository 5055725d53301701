"""What each gloo rank of ``test_ddp.py`` runs: a small model under DDP with and without a
thinwire hook, recording every message the hook sends and receives."""

import io

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from thinwire.codecs import CorruptMessageError

from thinwire.engine import wire
from thinwire.ddp import CodecHook

STEPS = 3


def _model() -> nn.Module:
    torch.manual_seed(0)  # every rank starts from the same weights
    return nn.Sequential(nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 3))


def _bytes(message) -> bytes:
    """A message's bytes, from a host message or a message tensor."""
    return bytes(message.numpy()) if isinstance(message, torch.Tensor) else bytes(message)


def train(rank: int, codec: str | None, steps: int = STEPS, **hook_options) -> dict:
    """Each step's gradients as every rank applies them, the messages of each exchange
    (step, sender, receiver, tensor, message), and the hook's ledger rows; or {"error": ...}
    when the hook refuses. Test-only options: ``by_rank`` (rank -> hook options of its own),
    ``wrapped_on`` (ranks whose model is wrapped once more: other parameter names, same
    shapes) and ``flip_at`` (the step at which each rank flips a byte of the message its next
    rank sends it)."""
    own = hook_options.pop("by_rank", {}).get(rank, {})
    hook_options = {**hook_options, **own}
    module = nn.Sequential(_model()) if rank in hook_options.pop("wrapped_on", ()) else _model()
    flip_at = hook_options.pop("flip_at", None)
    model = DDP(module, bucket_cap_mb=hook_options.pop("bucket_cap_mb", 25))
    hook, exchanges = None, []
    if codec is not None:
        try:
            hook = CodecHook(codec, **hook_options).register(model)
        except ValueError as exc:
            return {"error": str(exc)}
        send = hook.transport.exchange

        def recording(outbox, step, phase):
            inbox = send(outbox, step, phase)
            if step == flip_at:
                victim = next(e for e in inbox if e.sender == (rank + 1) % dist.get_world_size())
                victim.message[len(victim.message) // 2] ^= 0x10
            exchanges.extend((step, e.sender, e.receiver, e.tensor, _bytes(e.message)) for e in [*outbox, *inbox])
            return inbox
        hook.transport.exchange = recording
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    grads = []
    for step in range(steps):
        g = torch.Generator().manual_seed(100 * step + rank)
        x, y = torch.randn(5, 12, generator=g), torch.randint(0, 3, (5,), generator=g)
        sgd.zero_grad()
        try:
            nn.functional.cross_entropy(model(x), y).backward()
        except CorruptMessageError as exc:
            return {"error": str(exc)}
        grads.append({n: p.grad.clone() for n, p in model.module.named_parameters()})
        sgd.step()
    ledger = hook.ledger.rows() if hook else []
    return {"grads": grads, "exchanges": exchanges, "ledger": ledger,
            "payloads": {m: wire.measure(bytearray(m))[0] for *_, m in exchanges},
            "seconds": hook.seconds if hook else []}


def _rank(rank: int, world: int, port: int, cases: list, queue) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        buffer = io.BytesIO()  # tensors as bytes: a queued tensor's shared memory goes with its process
        torch.save([train(rank, codec, **options) for codec, options in cases], buffer)
        queue.put((rank, buffer.getvalue()))
    finally:
        dist.destroy_process_group()


def run_on_gloo(world: int, port: int, cases: list[tuple[str | None, dict]]) -> list[list[dict]]:
    """``train`` for each (codec, hook options) case on ``world`` gloo processes: [rank][case]."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_rank, args=(r, world, port, cases, queue)) for r in range(world)]
    for p in procs:
        p.start()
    results = dict(queue.get(timeout=300) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return [torch.load(io.BytesIO(results[r]), weights_only=False) for r in range(world)]
