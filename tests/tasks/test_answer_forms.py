"""An answer is judged as a person judges it: each declared equivalent form of the value passes,
a wrong value still fails, and a criterion that declares no form keeps the exact match."""

from __future__ import annotations

from typing import Any

import pytest
from _task_episodes import make_episode
from pydantic import TypeAdapter, ValidationError

from pocketpilot.contracts import Finish
from pocketpilot.executor.sandbox import default_state
from pocketpilot.tasks import check_criterion
from pocketpilot.tasks.forms import ValueForm, says_value
from pocketpilot.tasks.spec import Criterion

CRITERION: TypeAdapter[Criterion] = TypeAdapter(Criterion)
STATE = default_state()

HOURS = ValueForm(kind="time_range", all_day=["open 24 hours", "24/7", "all day"])
DISTANCE = ValueForm(kind="quantity", units=["km", "kilometres", "kilometers"], tolerance=0.05)
STEPS = ValueForm(kind="number", scales={"k": 1000, "thousand": 1000})
TIME = ValueForm(kind="time")


def judged(criterion: dict[str, Any], summary: str) -> bool:
    episode = make_episode(Finish(summary=summary))
    return check_criterion(CRITERION.validate_python(criterion), STATE, STATE, episode).passed


@pytest.mark.parametrize("said", [
    "It's open 09:00-17:00.", "Open 9:00-17:00", "9 am to 5 pm", "from 9am until 5pm", "9 to 5",
    "between 9 a.m. and 5 p.m.", "09:00 – 17:00", "9.00-17.00",
])
def test_a_time_range_in_any_of_its_forms(said: str) -> None:
    assert says_value(HOURS, "09:00-17:00", said)


@pytest.mark.parametrize("said", ["9 am to 6 pm", "10 to 5", "8:00-17:00", "open 24 hours", "It closes at 17:00"])
def test_another_time_range_fails(said: str) -> None:
    assert not says_value(HOURS, "09:00-17:00", said)


@pytest.mark.parametrize("said", ["open 24 hours", "It's open 24/7.", "00:00-23:59", "midnight to midnight",
                                  "12 am to 11:59 pm"])
def test_a_whole_day_in_any_of_its_forms(said: str) -> None:
    assert says_value(HOURS, "00:00-23:59", said)


def test_a_whole_day_phrase_needs_a_declaration() -> None:
    assert not says_value(ValueForm(kind="time_range"), "00:00-23:59", "open 24 hours")


@pytest.mark.parametrize("said", ["7:30 am", "07:30", "7:30", "at 7.30am"])
def test_a_time_in_any_of_its_forms(said: str) -> None:
    assert says_value(TIME, "07:30", said)


@pytest.mark.parametrize("said", ["7:30 pm", "8:30 am", "there are 7 alarms"])
def test_another_time_fails(said: str) -> None:
    assert not says_value(TIME, "07:30", said)


@pytest.mark.parametrize("said", ["1,200 steps", "1200", "1.2k steps", "1.2 thousand", "1200.0"])
def test_a_number_in_any_declared_format(said: str) -> None:
    assert says_value(STEPS, "1200", said)


@pytest.mark.parametrize("said", ["1,300 steps", "12000", "1.3k", "11200", "a thousand and two hundred"])
def test_another_number_fails(said: str) -> None:
    assert not says_value(STEPS, "1200", said)


def test_a_scale_counts_only_where_declared() -> None:
    assert not says_value(ValueForm(kind="number"), "1200", "1.2k")


@pytest.mark.parametrize("said", ["2.41 km", "2.41 kilometres away", "about 2.4 km", "It is 2.41."])
def test_a_quantity_in_its_units_and_rounding(said: str) -> None:
    assert says_value(DISTANCE, "2.41", said)


@pytest.mark.parametrize("said", ["2.41 miles", "2.3 km", "24.1 km", "12.41 km"])
def test_another_quantity_or_unit_fails(said: str) -> None:
    assert not says_value(DISTANCE, "2.41", said)


def test_a_number_form_reads_numbers_as_words_of_their_own() -> None:
    # the exact match finds "80" inside "180"; a person, and the number form, do not
    assert judged({"kind": "answer", "any_of": ["80"]}, "The battery is at 180%.")
    assert not judged({"kind": "answer", "any_of": ["80"], "form": {"kind": "number"}}, "The battery is at 180%.")
    assert judged({"kind": "answer", "any_of": ["80"], "form": {"kind": "number"}}, "The battery is at 80%.")


def test_the_answer_criterion_uses_its_declared_form() -> None:
    hours = {"kind": "answer", "any_of": ["07:00-22:00"], "form": {"kind": "time_range"}}
    assert judged(hours, "FreshMart is open from 7 am to 10 pm.")
    assert judged(hours, "Hours: 07:00-22:00")
    assert not judged(hours, "FreshMart is open from 8 am to 10 pm.")
    both = {"kind": "answer", "all_of": ["07:00-22:00", "08:00-20:00"], "form": {"kind": "time_range"}}
    assert judged(both, "7am-10pm, and the other 8 to 8")
    assert not judged(both, "7am-10pm")


def test_without_a_form_the_match_stays_exact() -> None:
    exact = {"kind": "answer", "any_of": ["07:00-22:00"]}
    assert judged(exact, "Open 07:00-22:00.")
    assert not judged(exact, "Open from 7 am to 10 pm.")
    assert judged({"kind": "answer", "any_of": ["8432"]}, "8,432 steps")  # separators, as before


def test_a_value_the_form_cannot_read_is_matched_exactly() -> None:
    assert says_value(HOURS, "by appointment", "Only by appointment.")
    assert not says_value(STEPS, "many", "a few")


def test_an_unknown_form_is_refused() -> None:
    with pytest.raises(ValidationError):
        CRITERION.validate_python({"kind": "answer", "any_of": ["1"], "form": {"kind": "colour"}})
    with pytest.raises(ValidationError):
        CRITERION.validate_python({"kind": "answer", "any_of": ["1"], "form": {"kind": "number", "tolerance": -1}})


def test_a_form_counts_in_the_task_digest_and_its_absence_does_not() -> None:
    from pocketpilot.tasks import load_suite

    task = next(t for t in load_suite("dev") if any(c.kind == "answer" for c in t.criteria))
    answer = next(c for c in task.criteria if c.kind == "answer")
    assert '"form"' not in answer.model_dump_json()  # dumps as before the field existed
    formed = answer.model_copy(update={"form": ValueForm(kind="number")})
    other = task.model_copy(update={"criteria": [formed if c is answer else c for c in task.criteria]})
    assert other.digest() != task.digest()


# ---------------------------------------------------------------- a value written into a record's text

NOTE_AT = "notes.items"


def _with_note(body: str) -> dict[str, Any]:
    """The start state with one new note whose body is ``body``."""
    final = STATE.model_dump(mode="json")
    final["notes"]["items"] = [*final["notes"]["items"], {"id": "note-99", "title": "Balance", "body": body}]
    return final


def written(criterion: dict[str, Any], body: str) -> bool:
    episode = make_episode(Finish(summary="Done."))
    return check_criterion(CRITERION.validate_python(criterion), STATE, _with_note(body), episode).passed


NUMBER_BODY = {"kind": "state", "path": NOTE_AT, "contains": {"title": "Balance", "body": "8600.0"}, "created": True,
               "forms": {"body": {"kind": "number", "scales": {"k": 1000}}}}


@pytest.mark.parametrize("body", ["8600", "8600.0", "8,600", "The balance is 8600 EUR.", "8.6k"])
def test_a_number_written_into_a_record_s_text_in_any_declared_form(body: str) -> None:
    assert written(NUMBER_BODY, body)


@pytest.mark.parametrize("body", ["8601", "86000", "18600", "no number here"])
def test_another_number_written_into_the_text_fails(body: str) -> None:
    assert not written(NUMBER_BODY, body)


def test_without_forms_the_written_text_must_contain_the_value_as_written() -> None:
    plain = {k: v for k, v in NUMBER_BODY.items() if k != "forms"}
    assert written(plain, "8600.0")
    assert not written(plain, "8600")  # the defect the form fixes: a person writes 8600 for 8600.0


def test_a_form_judges_only_its_own_field() -> None:
    # the title keeps its containment test beside a formed body
    assert not written({**NUMBER_BODY, "contains": {"title": "Savings", "body": "8600.0"}}, "8600")


def test_forms_need_a_record_to_judge() -> None:
    with pytest.raises(ValidationError, match="forms applies to contains"):
        CRITERION.validate_python({"kind": "state", "path": NOTE_AT, "contains": "8600.0",
                                   "forms": {"body": {"kind": "number"}}})
    with pytest.raises(ValidationError, match="forms names fields contains does not: note"):
        CRITERION.validate_python({**NUMBER_BODY, "forms": {"note": {"kind": "number"}}})


def test_a_state_criterion_without_forms_dumps_as_before() -> None:
    plain = CRITERION.validate_python({k: v for k, v in NUMBER_BODY.items() if k != "forms"})
    assert "forms" not in plain.model_dump()
    assert "forms" in CRITERION.validate_python(NUMBER_BODY).model_dump()
