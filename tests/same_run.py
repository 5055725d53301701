"""One check for "the same run on two transports": identical ledgers and evaluations, and
losses equal up to the order in which the reported mean adds the ranks' parts."""

import torch


def assert_same_run(local, distributed, tol: float = 1e-6) -> None:
    assert local.ledger.rows() == distributed.ledger.rows()
    assert local.metrics["test_accuracy"] == distributed.metrics["test_accuracy"]
    torch.testing.assert_close(torch.tensor(local.metrics["loss"]), torch.tensor(distributed.metrics["loss"]),
                               atol=tol, rtol=tol)
