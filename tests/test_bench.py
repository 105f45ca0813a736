"""``nox -s bench``'s report: each timed target with whether the run met it (made-up runs: the
benchmark itself takes minutes and wants a quiet machine)."""

from book_extensions.commands.bench import Run, edit_code, verdicts


def run(seconds: float, executed: list[str] = (), execution_seconds: float | None = 0.0) -> Run:
    return Run(seconds, {"en": list(executed), "zh": []}, execution_seconds, 0)


def test_each_target_is_reported_met_or_not():
    cold = run(400.0, ["a", "b"], 350.0)
    assert verdicts(cold, run(20.0), run(2.5), run(9.0, ["a"], 6.5)) == [
        "no-change rebuild / cold build: 0.050x (target: at most 0.10x): met",
        "prose-edit rebuild: 2.5 s (target: at most 3.0 s): met",
        "code-edit rebuild: 9.0 s (target: at most 9.5 s, the 6.5 s its execution took + 3.0 s): met",
    ]
    assert verdicts(cold, run(41.0), run(3.2), run(10.0, ["a"], 6.5)) == [
        "no-change rebuild / cold build: 0.102x (target: at most 0.10x): NOT met",
        "prose-edit rebuild: 3.2 s (target: at most 3.0 s): NOT met",
        "code-edit rebuild: 10.0 s (target: at most 9.5 s, the 6.5 s its execution took + 3.0 s): NOT met",
    ]


def test_a_code_edit_without_an_execution_time_is_unknown():
    (*_, code_edit) = verdicts(run(400.0), run(20.0), run(2.0), run(9.0, ["?"], None))
    assert code_edit == ("code-edit rebuild: 9.0 s (target: at most 3.0 s over the edited page's execution, "
                         "which no report gave): unknown")


def test_a_code_edit_goes_into_the_first_code_cells_body(tmp_path):
    # Not into the cell a longer fence shows as source.
    page = tmp_path / "page.md"
    page.write_text("````md\n```{code-cell}\nshown\n```\n````\n````{code-cell}\nx = 1\n````\n", encoding="utf8")
    edit_code(page)
    assert page.read_text(encoding="utf8").endswith("````{code-cell}\nx = 1\n_bench_edit = 1\n````\n")
