"""The pattern programs in examples/ run, and show what the patterns page says they show."""

import runpy

import torch
from books import EXAMPLES

PROGRAMS = ["gan_step.py", "tbptt.py", "target_network.py", "stop_gradient.py", "straight_through.py", "logging_losses.py"]


def load(name: str) -> dict:
    return runpy.run_path(str(EXAMPLES / name))


# Each runs as a program in test_examples.py; that pages print the same on every run is
# checked for all of them by `nox -s determinism` (the patterns page loads these programs).


def test_gan_detached_fake_gives_the_generator_no_gradient():
    gan = load("gan_step.py")
    detached = gan["discriminator_step"](detach=True)
    attached = gan["discriminator_step"](detach=False)
    assert detached["G grad"] is None
    assert attached["G grad"] is not None and attached["G grad"].abs().sum() > 0
    assert torch.equal(detached["D grad"], attached["D grad"])
    assert detached["G step"] == "ok"
    assert "backward through the graph a second time" in attached["G step"]


def test_tbptt_detach_keeps_each_backward_inside_its_chunk():
    tbptt = load("tbptt.py")
    chunk = tbptt["CHUNK"]
    detached = tbptt["run"](detach=True)
    assert len({row["nodes"] for row in detached}) == 1
    for row in detached:
        first, last = row["steps"]
        assert row["reached"] == list(range(first, last + 1))
    kept = tbptt["run"](detach=False)
    nodes = [row["nodes"] for row in kept]
    assert nodes == sorted(nodes) and len(set(nodes)) == len(nodes)
    assert nodes[0] == detached[0]["nodes"]
    for row in kept:
        assert row["reached"] == list(range(0, row["steps"][1] + 1))
    assert len(kept[-1]["reached"]) > chunk
    assert "backward through the graph a second time" in tbptt["without_retain_graph"]()


def test_count_nodes_counts_shared_nodes_once():
    count_nodes = load("tbptt.py")["count_nodes"]
    a = torch.ones(2, requires_grad=True)
    b = a.exp()
    assert count_nodes(b * b + b) == 4


def test_target_network_stays_fixed_and_follows_by_ema():
    row = load("target_network.py")["train_step"]()
    assert row["target params require grad"] is False
    assert row["target output requires grad"] is False
    assert row["target grads after backward"] == [None, None]
    assert row["target unchanged by step"] and row["online changed by step"]
    assert row["target moved by ema_update"] and row["target == m*t + (1-m)*p"]


def test_target_update_without_no_grad_puts_the_target_in_the_graph():
    row = load("target_network.py")["update_without_no_grad"]()
    assert row == {"requires_grad": True, "is_leaf": False, "grad_fn": "AddBackward0", "output requires_grad": True}


def test_stop_gradient_sends_each_term_only_to_its_predictor_branch():
    reached = load("stop_gradient.py")["reached"]
    with_sg = reached(stop_gradient=True)
    assert with_sg["D(p1, z2)"] == {"z1": True, "z2": False}
    assert with_sg["D(p2, z1)"] == {"z1": False, "z2": True}
    assert with_sg["encoder and predictor learn"]
    without = reached(stop_gradient=False)
    assert without["D(p1, z2)"] == {"z1": True, "z2": True}
    assert without["D(p2, z1)"] == {"z1": True, "z2": True}


def test_straight_through_rounds_forward_and_passes_gradient_unchanged():
    st = load("straight_through.py")
    torch.manual_seed(0)
    upstream = torch.randn(len(st["X"]))
    value, grad = st["forward_and_grad"](st["straight_through_round"], upstream)
    assert torch.equal(value, torch.round(torch.tensor(st["X"])))
    assert torch.equal(grad, upstream)
    _, ones = st["forward_and_grad"](st["straight_through_round"], torch.ones(len(st["X"])))
    assert torch.equal(ones, torch.ones(len(st["X"])))
    _, zero = st["forward_and_grad"](torch.round, upstream)
    assert torch.equal(zero, torch.zeros(len(st["X"])))


def test_logged_loss_tensors_keep_their_graphs_alive():
    logging = load("logging_losses.py")
    run, loggers = logging["run"], logging["LOGGERS"]
    for loop in ("train", "eval"):
        kept = run(loop, loggers["loss"])
        for name in ("loss.item()", "loss.detach()"):
            assert run(loop, loggers[name]) == {"graph nodes": 0, "saved tensors": 0, "saved bytes": 0}
        assert kept["graph nodes"] > 0
    train, evaluate = run("train", loggers["loss"]), run("eval", loggers["loss"])
    assert train["saved bytes"] == 0
    batch, width = logging["BATCH"], logging["WIDTH"]
    assert evaluate["saved bytes"] >= logging["BATCHES"] * 2 * batch * width * 4
