"""Progress bars show bytes, total and rate on a terminal, and nothing animated without one."""

from __future__ import annotations

from pocketpilot.cli._progress import pull_progress, task_bar


def test_download_bar_shows_bytes_total_and_rate(capsys):
    progress = pull_progress("tiny", 2, bars=True)
    progress("download", 0, 2)
    for done in (1 << 20, 3 << 20, 4 << 20):
        progress("bytes", done, 4 << 20)
    progress("download", 2, 2)
    progress("assemble", 4 << 20, 4 << 20)
    err = capsys.readouterr().err
    assert "downloading tiny (2 packages)" in err
    assert "4.00M" in err and "B/s" in err  # bytes so far / total, and the rate


def test_no_bar_without_a_terminal(capsys):
    progress = pull_progress("tiny", 2, bars=False)
    progress("download", 0, 2)
    progress("bytes", 1 << 20, 4 << 20)
    progress("assemble", 4 << 20, 4 << 20)
    err = capsys.readouterr().err
    assert "B/s" not in err and "\r" not in err
    assert "downloading tiny" in err and "assembling and verifying: 100%" in err


def test_task_bar_counts_tasks_with_an_eta(capsys):
    bar = task_bar(4, bars=True)
    bar.update(1)
    bar.update(1)
    bar.close()
    err = capsys.readouterr().err
    assert "2/4" in err and "<" in err  # done/total and tqdm's elapsed<remaining
