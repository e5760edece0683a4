import io
import json

from training.progress import RunProgress, read_curve


def test_plain_lines_when_not_a_terminal(tmp_path):
    out = io.StringIO()
    with RunProgress("eval", total=4, unit="trials", figures=("success",), stream=out, interval_s=0.0,
                     curve=tmp_path / "c.jsonl", terminal=False) as p:  # fmt: skip
        for k in range(4):
            p.update({"trial": k, "success": k / 4})
    lines = out.getvalue().splitlines()
    assert len(lines) == 4 and lines[-1].startswith("eval: 4/4 trials") and "success 0.75" in lines[-1]
    assert [r["trial"] for r in read_curve(tmp_path / "c.jsonl")] == [0, 1, 2, 3]


def test_a_bar_on_a_terminal_with_the_key_figure():
    out = io.StringIO()
    with RunProgress("train", time_box_s=60.0, figures=("loss",), stream=out, terminal=True) as p:
        p.update({"loss": 0.125})
        p.log("a line above the bar")
    text = out.getvalue()
    assert "train" in text and "loss 0.125" in text and "(1 iterations)" in text and "a line above the bar" in text


def test_a_torn_last_line_is_dropped(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"k": 0}) + "\n" + '{"k": 1')
    assert read_curve(path) == [{"k": 0}]
