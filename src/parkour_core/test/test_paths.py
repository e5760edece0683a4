"""shown_path: a path inside the checkout is written relative to it, any other as given."""

from __future__ import annotations

from parkour_core.paths import repo_root, shown_path


def test_a_path_in_the_checkout_is_shown_relative_to_it():
    assert shown_path(repo_root() / "models" / "climb_teacher" / "teacher.pt") == "models/climb_teacher/teacher.pt"


def test_a_path_outside_the_checkout_is_shown_as_given(tmp_path):
    outside = tmp_path / "teacher.pt"
    assert shown_path(outside) == str(outside)
