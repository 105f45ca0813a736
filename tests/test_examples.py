"""The programs in examples/ run and say what the book says they say.

Each is a code cell of a page in its language (``load:``), so every build runs each one: the
tests read what it printed there, from the real book's executed notebooks (conftest.py's
example_output). Run as programs on their own, as a reader who downloads one does, they are
the scheduled tier's (the multi-process ones take 10-20 s each).
"""

import re
import runpy
import subprocess
import sys

import pytest
from books import EXAMPLES, ROOT

PROGRAMS = sorted(path.relative_to(EXAMPLES).as_posix() for path in EXAMPLES.rglob("*.py"))


@pytest.mark.unit
def test_every_example_is_run_by_a_page_of_its_language():
    loaded = {}
    for page in (ROOT / "docs").glob("*/*.md"):
        for name in re.findall(r"^:?load: \.\./\.\./examples/(\S+\.py)$", page.read_text(encoding="utf8"), re.M):
            loaded.setdefault(name, set()).add(page.parent.name)
    assert {name: loaded.get(name) for name in PROGRAMS} == \
        {name: {"zh" if name.startswith("zh/") else "en"} for name in PROGRAMS}


@pytest.mark.parametrize("program", PROGRAMS)
def test_every_example_prints_its_report_where_its_page_runs_it(program, example_output):
    result = example_output(program)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()


@pytest.mark.scheduled
@pytest.mark.parametrize("program", PROGRAMS)
def test_every_example_runs_as_a_program_on_its_own(program):
    result = subprocess.run([sys.executable, str(EXAMPLES / program)], capture_output=True, text=True,
                            timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()


def test_four_cuts():
    four_cuts = runpy.run_path(str(EXAMPLES / "four_cuts.py"))
    rows = {name: four_cuts["run"](tool) for name, tool in four_cuts["TOOLS"].items()}
    assert rows[".data"]["shares storage"] and not rows[".data"]["shares version"]
    assert rows[".data"]["backward"].endswith("(WRONG)")
    assert rows[".detach()"]["shares storage"] and rows[".detach()"]["shares version"]
    assert "modified by an inplace operation" in rows[".detach()"]["backward"]
    assert rows[".detach_()"]["c is out"]
    assert "does not require grad" in rows[".detach_()"]["backward"]
    assert not rows[".clone()"]["shares storage"] and rows[".clone()"]["c.requires_grad"]
    assert rows[".clone()"]["backward"].endswith("(right)")


def test_four_cuts_prints_one_markdown_table_row_per_tool(example_output):
    # The book renders this text as a table (myst-nb, gfm): a stray "|" in a message, or a
    # row of another width, would break it.
    result = example_output("four_cuts.py")
    header, rule, *rows = result.stdout.strip().splitlines()
    assert header.startswith("| tool | backward |") and rule == "|---" * 6 + "|"
    assert [row.split(" | ")[0] for row in rows] == ["| `.data`", "| `.detach()`", "| `.detach_()`", "| `.clone()`"]
    assert all(line.count("|") == 7 for line in [header, *rows]), rows


def test_four_cuts_shows_a_table_in_jupyter():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shown = []
    shell.display_pub.publish = lambda data, metadata=None, **kwargs: shown.append(data)
    try:
        shell.run_cell(f"%run {EXAMPLES / 'four_cuts.py'}")
    finally:
        InteractiveShell.clear_instance()
    assert len(shown) == 1 and shown[0]["text/markdown"].startswith("| tool | backward |")
    assert shown[0]["text/plain"] == shown[0]["text/markdown"]  # what records compare


def setups_of(example_output, program: str) -> tuple[str, dict[str, list[str]]]:
    """Run a multi-process example; its report and, per setup (an unindented line), its lines.

    The report must hold nothing that changes from run to run: no ports, process ids or paths.
    """
    result = example_output(program)
    assert result.returncode == 0, result.stderr
    report = result.stdout
    assert "127.0.0.1" not in report and "/" not in report
    setups: dict[str, list[str]] = {}
    for line in report.splitlines():
        if not line.startswith(" "):
            setups[line.rstrip(":")] = []
        else:
            setups[list(setups)[-1]].append(line.strip())
    return report, setups


def test_ddp_frozen_reports_what_the_book_says(example_output):
    _, setups = setups_of(example_output, "ddp_frozen.py")
    assert list(setups) == ["frozen before wrapping", "frozen after wrapping",
                            "frozen after wrapping, find_unused_parameters=True", "unfrozen after wrapping",
                            "re-wrapped after unfreezing", "heads in turn",
                            "heads in turn, find_unused_parameters=True", "heads in turn, static_graph=True",
                            "head 1 never used, static_graph=True"]
    reduced = "gradient elements all-reduced in each step: "
    same = "same weights on both ranks at the end: "
    # the ranks seed their models differently, and DDP's constructor copies rank 0's weights
    for lines in setups.values():
        assert lines[0] == "same weights on both ranks: before DDP() False, right after True"
    assert setups["frozen before wrapping"][1:] == ["trained 3 steps; body moved: False; body has a grad: False",
                                                    reduced + "10 10 10", same + "body True, heads True"]
    # a late freeze, or heads in turn: step 0 all-reduces nothing, its optimizer step applies
    # each rank's own gradients, and the error only comes at step 1
    for name, indices, body in [("frozen after wrapping", "0 1", True), ("heads in turn", "4 5", False)]:
        lines = setups[name]
        assert lines[1] == "RuntimeError at step 1, the same on both ranks:"
        assert lines[2].startswith("Expected to have finished reduction in the prior iteration")
        assert lines[-3:] == [f"Parameter indices which did not receive grad for rank 0: {indices}",
                              reduced + "0", same + f"body {body}, heads False"]
    assert "static_graph" in " ".join(setups["heads in turn, static_graph=True"])
    for name in ["frozen after wrapping, find_unused_parameters=True",
                 "heads in turn, find_unused_parameters=True", "head 1 never used, static_graph=True"]:
        assert setups[name][2:] == [reduced + "30 30 30", same + "body True, heads True"]
    # unfrozen after wrapping: never all-reduced, so the body drifts apart; a new DDP fixes it
    assert setups["unfrozen after wrapping"][1:] == ["trained 3 steps; body moved: True; body has a grad: True",
                                                     reduced + "10 10 10", same + "body False, heads True"]
    assert setups["re-wrapped after unfreezing"][1:] == ["trained 3 steps; body moved: True; body has a grad: True",
                                                         reduced + "10 30 30", same + "body True, heads True"]


def test_ddp_no_sync_reports_what_the_book_says(example_output):
    _, setups = setups_of(example_output, "ddp_no_sync.py")
    reduced = "all-reduces per micro-batch: "
    same, first, one = "same weights on both ranks: ", "allclose to without no_sync: ", "allclose to one process: "
    assert setups == {
        # every backward all-reduces, and gives what one process gets on all the data
        "without no_sync": [reduced + "1 1 1 1 | 1 1 1 1", same + "True", one + "True"],
        # no_sync: only the last micro-batch of each step all-reduces, to the same weights
        "no_sync for all but the last": [reduced + "0 0 0 1 | 0 0 0 1", same + "True", first + "True", one + "True"],
        # a forward pass outside no_sync has already armed the all-reduce of its backward
        "no_sync around backward only": [reduced + "1 1 1 1 | 1 1 1 1", same + "True", first + "True", one + "True"],
        # never leaving no_sync never all-reduces: each rank trains on its own gradients
        "no_sync for every micro-batch": [reduced + "0 0 0 0 | 0 0 0 0", same + "False", first + "False", one + "False"],
    }


def test_fsdp_no_sync_reports_what_the_book_says(example_output):
    report, setups = setups_of(example_output, "fsdp_no_sync.py")
    assert report.startswith("numbers in the model: 49\n")
    del setups["numbers in the model: 49"]
    reduced, held = "reduce-scatters per micro-batch: ", "gradient numbers held after micro-batch 1: "
    gathered, kept = "all-gathers per micro-batch: ", "full parameters still gathered after the last step: "
    moved, same = "weights moved: ", "same weights on both ranks: "
    first, one = "allclose to syncing every one: ", "allclose to one process: "
    once = reduced + "0 0 0 1 | 0 0 0 1"
    every_gather, none_kept = gathered + "1 1 1 1 | 1 1 1 1", kept + "none"
    good = [moved + "True", same + "True", first + "True", one + "True"]
    assert setups == {
        # every backward reduce-scatters, and leaves rank 0 only its shard of the gradients
        "FSDP2, sync every micro-batch": [reduced + "1 1 1 1 | 1 1 1 1", every_gather, none_kept, held + "29",
                                          moved + "True", same + "True", one + "True"],
        # one reduce-scatter per optimizer step, to the same weights, but the whole gradient is kept meanwhile;
        # the parameters are still all-gathered for every micro-batch's forward pass
        "FSDP2, sync the last only": [once, every_gather, none_kept, held + "49", *good],
        # never syncing leaves the sharded parameters without a gradient: nothing trains, silently
        "FSDP2, sync never": [reduced + "0 0 0 0 | 0 0 0 0", every_gather, none_kept, held + "49",
                              moved + "False", same + "True", first + "False", one + "False"],
        # keeping the full parameters until the last backward pass: one all-gather per step, the same weights
        "FSDP2, sync and reshard after the last only": [once, gathered + "1 0 0 0 | 1 0 0 0", none_kept,
                                                        held + "49", *good],
        "FSDP2, sync the last only, reshard() before the step": [once, gathered + "1 0 0 0 | 1 0 0 0", none_kept,
                                                                 held + "49", *good],
        # without reshard() the second step's forward passes use the initial full parameters, silently
        "FSDP2, sync the last only, reshard never": [once, gathered + "1 0 0 0 | 0 0 0 0",
                                                     kept + "the initial weights", held + "49", moved + "True",
                                                     same + "True", first + "False", one + "False"],
        "FSDP1, without no_sync": [reduced + "1 1 1 1 | 1 1 1 1", held + "25", moved + "True", same + "True",
                                   one + "True"],
        "FSDP1, no_sync for all but the last": [once, held + "49", *good],
        # unlike DDP, FSDP1 looks at no_sync() during the backward pass, not the forward pass
        "FSDP1, no_sync around backward only": [once, held + "49", *good],
    }


def test_fsdp_frozen_reports_what_the_book_says(example_output):
    _, setups = setups_of(example_output, "fsdp_frozen.py")
    assert list(setups) == ["FSDP2, body sharded apart", "FSDP2, one unit",
                            "FSDP2, optimizer built before fully_shard", "FSDP1, one unit",
                            "FSDP1, one unit, use_orig_params=True", "FSDP1, body wrapped apart",
                            "FSDP1, half the body frozen", "FSDP1, half the body frozen, use_orig_params=True"]
    end = ["after 3 steps: frozen moved False, trainable moved True",
           "same on both ranks: True; as one process: True"]
    # one line per parameter: frozen or not, its shard on rank 0 and rank 1, where it got a
    # gradient and Adam state
    body = ["body.0.weight: frozen; shards 4x4, 4x4; no grad, no state",
            "body.0.bias: frozen; shards 4, 4; no grad, no state",
            "body.2.weight: frozen; shards 4x8, 4x8; no grad, no state",
            "body.2.bias: frozen; shards 4, 4; no grad, no state"]

    # FSDP2: DTensors sharded on dim 0, the same whether the frozen body is a unit of its own
    # or shares one with the head; no grad and no Adam state for a frozen parameter
    for name in ["FSDP2, body sharded apart", "FSDP2, one unit"]:
        assert setups[name] == [
            "no warnings", "parameters: DTensor; Adam state: DTensor", *body,
            "head.weight: trainable; shards 1x8, 1x8; grad and state on both ranks",
            "head.bias: trainable; shards 1, 1; grad and state on both ranks", *end]
    # an optimizer built before fully_shard holds the replaced parameters: nothing trains, silently
    assert setups["FSDP2, optimizer built before fully_shard"] == [
        "no warnings", "parameters: DTensor; Adam state: none", *body,
        "head.weight: trainable; shards 1x8, 1x8; grad on both ranks, no state",
        "head.bias: trainable; shards 1, 1; grad on both ranks, no state",
        "after 3 steps: frozen moved False, trainable moved False",
        "same on both ranks: True; as one process: False"]
    # FSDP1: one flat parameter per unit, which needs one requires_grad
    assert setups["FSDP1, one unit"] == [
        "ValueError: Must flatten tensors with uniform `requires_grad` when", "`use_orig_params=False`"]
    assert setups["FSDP1, one unit, use_orig_params=True"] == [
        "no warnings", "parameters: Parameter; Adam state: Tensor",
        "body.0.weight: frozen; shards 32, 0; no grad, no state",
        "body.0.bias: frozen; shards 8, 0; no grad, no state",
        "body.2.weight: frozen; shards 25, 39; no grad, no state",
        "body.2.bias: frozen; shards 0, 8; no grad, no state",
        "head.weight: trainable; shards 0, 16; grad and state on rank 1",
        "head.bias: trainable; shards 0, 2; grad and state on rank 1", *end]
    assert setups["FSDP1, body wrapped apart"] == [
        "no warnings", "parameters: Parameter; Adam state: Tensor",
        "_flat_param: trainable; shards 9, 9; grad and state on both ranks",
        "body._flat_param: frozen; shards 56, 56; no grad, no state", *end]
    error = " ".join(setups["FSDP1, half the body frozen"])
    assert error.startswith("ValueError: body has both parameters with requires_grad=True and False.")
    assert "FSDP does not support wrapping such modules when use_orig_params=False." in error
    lines = setups["FSDP1, half the body frozen, use_orig_params=True"]
    warning = " ".join(lines[:lines.index("parameters: Parameter; Adam state: Tensor")])
    assert warning.startswith("UserWarning: body has both parameters with requires_grad=True and False.")
    assert "(112 numel instead of 72 numel before sharding via reduce-scatter)" in warning
    assert lines[-2:] == end


def test_fsdp_resume_reports_what_the_book_says(example_output):
    _, setups = setups_of(example_output, "fsdp_resume.py")
    # DCP's optimizer state dict is keyed by name and holds no entry for a frozen parameter;
    # the plain one is positional
    assert setups["saved after 3 steps, body frozen"] == [
        "model state dict: 6 tensors, DTensor", "optim state keys: head.weight, head.bias",
        "entries: exp_avg, exp_avg_sq, step", "group params: 6 names",
        "body.0.weight, body.0.bias, body.2.weight, body.2.bias,", "head.weight, head.bias",
        "plain state keys: [4, 5]", "plain group params: [0, 1, 2, 3, 4, 5]", "warnings: none"]
    made = "made before loading: body step 1; head step 1"
    assert setups["resumed, body frozen"] == [
        "made before loading: body none; head step 1", "after loading: body none; head step 3",
        "after 3 more steps: body none; head step 6", "as uninterrupted: True"]
    # unfrozen: the fresh optimizer's state dict asks for body entries the checkpoint lacks
    assert setups["resumed, body unfrozen"] == [
        made, "CheckpointException, failed ranks [0, 1]:",
        "RuntimeError: Missing key in checkpoint state_dict:", "optim.state.body.0.weight.step."]
    # a partial load keeps the state made by get_optimizer_state_dict's zero step
    assert setups["resumed, body unfrozen, allow_partial_load=True"] == [
        made, "after loading: body step 1; head step 3", "after 3 more steps: body step 4; head step 6",
        "as uninterrupted: False"]
    error = " ".join(setups["resumed, body unfrozen, body entries dropped"][2:])
    assert setups["resumed, body unfrozen, body entries dropped"][:2] == [made, "raised on both ranks:"]
    assert error == ("RuntimeError: Missing optimizer state for parameter 'body.0.weight' in checkpoint."
                     " The parameter requires gradients but has no saved optimizer state."
                     " To load anyway, use StateDictOptions(strict=False).")
    # the head's state loaded by name, the body without state, as if unfrozen without a restart
    assert setups["resumed, body unfrozen, body entries dropped, strict=False"] == [
        made, "after loading: body none; head step 3", "after 3 more steps: body step 3; head step 6",
        "as uninterrupted: True"]


def test_fsdp_trainable_only_reports_what_the_book_says(example_output):
    _, setups = setups_of(example_output, "fsdp_trainable_only.py")
    saved = setups["saved after 3 steps, body frozen"]
    body = "body.0.weight, body.0.bias, body.2.weight, body.2.bias"
    # ignore_frozen_params drops the frozen body from the model's state dict; the optimizer's
    # holds no state for it either way, and its group still lists every name
    assert saved[:6] == ["everything:", f"model keys: {body}, head.weight, head.bias",
                         "optimizer state keys: head.weight, head.bias", "optimizer group params: 6 names",
                         "state dict tensors: 12 on each rank", "numbers in them: 85 on each rank"]
    assert saved[6].startswith("files: ") and saved[6].endswith(" kB, of which the numbers 672 bytes")
    assert saved[7:13] == ["trainable only:", "model keys: head.weight, head.bias",
                           "optimizer state keys: head.weight, head.bias", "optimizer group params: 6 names",
                           "state dict tensors: 8 on each rank", "numbers in them: 29 on each rank"]
    assert saved[13].endswith(" kB, of which the numbers 224 bytes") and saved[14:] == ["warnings: none"]
    everything, trainable = (int(line.split()[1]) for line in (saved[6], saved[13]))
    assert 0.6 < trainable / everything < 0.9  # the files shrink by far less than the numbers
    # the default set_model_state_dict loads strictly: the body's keys are missing
    error = " ".join(setups["load trainable keys, set_model_state_dict's defaults"])
    assert error.startswith("raised on both ranks: RuntimeError: Error(s) in loading state_dict for FSDPNet:")
    assert 'Missing key(s) in state_dict: "body.0.weight", "body.0.bias", "body.2.weight", "body.2.bias".' in error
    loaded = ["head as saved: True; body as pretrained: True", "after 3 more steps, as uninterrupted: True"]
    assert setups["load trainable keys, strict=False"] == [f"missing keys: {body}", *loaded]
    # the fresh model's full state dict asks the checkpoint for the body, which it lacks
    assert setups["load all keys"] == ["CheckpointException, failed ranks [0, 1]:",
                                       "RuntimeError: Missing key in checkpoint state_dict:",
                                       "model.body.0.weight."]
    assert setups["load all keys, allow_partial_load=True"] == ["missing keys: none", *loaded]


def test_fsdp_checkpoint_wrapper_reports_what_the_book_says(example_output):
    _, setups = setups_of(example_output, "fsdp_checkpoint_wrapper.py")
    plain = "first: layers.0.lin.weight"
    wrapped = "first: layers.0._checkpoint_wrapped_module.lin.weight"
    same = ["keys of get_model_state_dict() changed: False", "gradients as with shard only: True"]
    assert setups == {
        "shard only": ["layers[0]: FSDPBlock", "in the step: block calls 2, all-gathers 5, on each rank",
                       "names of named_parameters() changed: False", plain, *same],
        # every order runs each block twice and gathers no more: only the module tree differs
        "wrap, then shard the wrappers": [
            "layers[0]: FSDPCheckpointWrapper around Block",
            "in the step: block calls 4, all-gathers 5, on each rank",
            "names of named_parameters() changed: True", wrapped, *same],
        "wrap, then shard the blocks inside": [
            "layers[0]: CheckpointWrapper around FSDPBlock",
            "in the step: block calls 4, all-gathers 5, on each rank",
            "names of named_parameters() changed: True", wrapped, *same],
        "shard, then wrap": [
            "layers[0]: CheckpointWrapper around FSDPBlock",
            "in the step: block calls 4, all-gathers 5, on each rank",
            "names of named_parameters() changed: True", wrapped, *same],
    }


def test_fsdp_param_groups_reports_what_the_book_says(example_output):
    report, setups = setups_of(example_output, "fsdp_param_groups.py")
    assert report.startswith("one process: parameters 6, ndim [2, 1, 1, 1, 2, 1]\n")
    flat = "after wrapping: parameters 1, ndim [1]; the same objects: False"
    orig = "after wrapping: parameters 6, ndim [1, 1, 1, 1, 1, 1]; the same objects: True"
    right = "tensors in the decay group: 2, in the no-decay group: 4"
    assert setups == {
        "one process: parameters 6, ndim [2, 1, 1, 1, 2, 1]": [],
        # an optimizer over the tensors from before FSDP1's flat wrapping trains nothing, silently
        "FSDP1, optimizer built before wrapping": [flat, right, "after 3 steps: moved False, as one process False"],
        # after it, there is one flat tensor per unit: no per-parameter groups, whichever rule
        "FSDP1, groups by shape after wrapping": [flat, "tensors in the decay group: 0, in the no-decay group: 1",
                                                  "after 3 steps: moved True, as one process False"],
        "FSDP1, groups by name before wrapping": [flat, "tensors in the decay group: 1, in the no-decay group: 0",
                                                  "after 3 steps: moved True, as one process False"],
        # use_orig_params=True keeps the objects, as 1-D slices: the shape rule fails after wrapping
        "FSDP1, use_orig_params=True, groups by shape after wrapping": [
            orig, "tensors in the decay group: 0, in the no-decay group: 6",
            "after 3 steps: moved True, as one process False"],
        "FSDP1, use_orig_params=True, groups by name before wrapping": [
            orig, right, "after 3 steps: moved True, as one process True"],
        # DTensors keep their dimensions
        "FSDP2, groups by shape after fully_shard": [
            "after wrapping: parameters 6, ndim [2, 1, 1, 1, 2, 1]; the same objects: False", right,
            "after 3 steps: moved True, as one process True"],
    }


def test_fsdp_clip_reports_what_the_book_says(example_output):
    report, setups = setups_of(example_output, "fsdp_clip.py")
    first = report.splitlines()[0]
    assert first == "one process, unsharded: total norm 0.1701; max_norm 0.1 scales the gradients by 0.5880"
    frozen = "frozen parameters without a grad on both ranks: True"
    right = ["returns a Tensor: 0.1701 on rank 0, 0.1701 on rank 1",
             "scales the gradients by 0.5880 on rank 0, 0.5880 on rank 1", frozen,
             "weights after the step as one process: True"]
    # FSDP1's parameters are this rank's slices: each rank clips by the norm of its own, silently
    local = ["returns a Tensor: 0.0119 on rank 0, 0.1697 on rank 1",
             "scales the gradients by 1.0000 on rank 0, 0.5894 on rank 1", frozen,
             "weights after the step as one process: False"]
    assert setups == {
        first: [],
        "FSDP1, nn.utils.clip_grad_norm_": local,
        "FSDP1, model.clip_grad_norm_": right,
        "FSDP1, use_orig_params=True, nn.utils.clip_grad_norm_": local,
        # FSDP2's norm is over every shard, and comes back as a DTensor
        "FSDP2, nn.utils.clip_grad_norm_": [right[0].replace("a Tensor", "a DTensor"), *right[1:]],
    }


def test_fsdp_mixed_precision_reports_what_the_book_says(example_output):
    _, setups = setups_of(example_output, "fsdp_mixed_precision.py")
    head = "head: input bfloat16, weights bfloat16; shards float32; grad float32 on both ranks"
    # computed in bfloat16, shards kept as stored, the frozen body without a gradient
    assert setups["param_dtype=bfloat16, reduce_dtype=float32, body a unit of its own"] == [
        "output: bfloat16", "body: input bfloat16, weights bfloat16; shards float32; grad None on both ranks", head]
    # a bfloat16 frozen body may share a unit with the float32 head: only trainable dtypes must agree
    assert setups["the same, body stored in bfloat16, one unit with the head"] == [
        "output: bfloat16", "body: input bfloat16, weights bfloat16; shards bfloat16; grad None on both ranks", head]
    end = "sharded grad at the end: float32"
    distance = "relative distance from the reference: "
    # with the sync off, gradients wait, full, in reduce_dtype; None follows the parameter's dtype
    assert setups["param_dtype=bfloat16, reduce_dtype=float32 (the reference)"] == [
        "kept between micro-batches: full float32", end]
    bf16 = setups["param_dtype=bfloat16, reduce_dtype=bfloat16"]
    assert bf16[:2] == ["kept between micro-batches: full bfloat16", end]
    assert setups["param_dtype=bfloat16, reduce_dtype=None"] == [
        "kept between micro-batches: full float32", end, distance + "0.0000"]
    every = setups["param_dtype=bfloat16, reduce_dtype=bfloat16, sync every micro-batch"]
    assert every[:2] == ["kept between micro-batches: sharded float32", end]
    fp32 = setups["no policy, all in float32"]
    assert fp32[:2] == ["kept between micro-batches: full float32", end]
    # accumulating in bfloat16 rounds once per micro-batch: several times the cost of a bfloat16
    # reduce per micro-batch, less than computing in bfloat16 at all
    accumulated, reduced, computed = (float(rows[2].removeprefix(distance)) for rows in (bf16, every, fp32))
    assert 3 * reduced < accumulated < computed
