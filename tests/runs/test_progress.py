"""Steps: progress lines with an ETA, sent to the sink installed around the work."""

from attnlab.runs.progress import Steps, hms, progress_sink


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_lines_carry_the_count_and_the_eta_from_the_rate_so_far():
    clock, lines = Clock(), []
    with progress_sink(lines.append):
        steps = Steps("models trained", 4, clock=clock)
        clock.t += 30
        steps.advance()
        clock.t += 30
        steps.advance(3)
        clock.t += 1
        steps.advance()
    assert lines == ["1/4 models trained, ETA 0:01:30", "3/4 models trained, ETA 0:00:20", "4/4 models trained"]


def test_without_a_sink_nothing_is_sent_and_the_sink_is_restored():
    lines = []
    with progress_sink(lines.append):
        with progress_sink(None):
            Steps("epochs", 2).advance()
        Steps("epochs", 2).advance()
    Steps("epochs", 2).advance()
    assert len(lines) == 1 and lines[0].startswith("1/2 epochs, ETA ")


def test_hms():
    assert [hms(0), hms(59.6), hms(3725), hms(-3)] == ["0:00:00", "0:01:00", "1:02:05", "0:00:00"]


def test_a_note_goes_to_the_sink_and_nowhere_without_one():
    from attnlab.runs.progress import note

    lines = []
    note("before any sink")  # nothing installed: dropped
    with progress_sink(lines.append):
        note("H = 8: T = 1240 memorized at step 8210")
    assert lines == ["H = 8: T = 1240 memorized at step 8210"]
