"""The adapter's per-request routing: skills a request needs, request-bound notes, offered actions."""

from __future__ import annotations

import time

import pytest

from pocketpilot.adapters import (
    EtaError,
    GuidanceFilter,
    RoutingNote,
    SkillRouter,
    asks_to_delegate,
    asks_to_remember,
    compile_eta,
    sandbox_tool_apps,
    session_kwargs,
)
from pocketpilot.adapters.placement import MemorySettings
from pocketpilot.contracts import ACTION_KINDS
from pocketpilot.skills import SkillLibrary, parse_skill
from pocketpilot.skills.errors import SkillError

SETTINGS = [
    "get_settings",
    "set_wifi",
    "set_bluetooth",
    "set_do_not_disturb",
    "set_brightness",
    "set_ring_mode",
    "get_device_info",
    "power_off",
]
NOTES_POWER = [
    "create_note",
    "list_notes",
    "search_notes",
    "read_note",
    "delete_note",
    "get_device_info",
    "power_off",
]


@pytest.fixture(scope="module")
def lib():
    return SkillLibrary.builtin()


@pytest.fixture(scope="module")
def eta(lib):
    tools, apps = sandbox_tool_apps()
    return compile_eta(tools, lib, apps=apps)


@pytest.fixture(scope="module")
def router(lib):
    return SkillRouter(lib)


def test_router_picks_the_skill_whose_words_the_request_uses(router):
    assert router.route("How many yards is 400 meters?", ["convert_units", "calculate"]) == [
        "unit-conversion"
    ]
    assert router.route("Turn off the wifi.", SETTINGS) == ["quick-settings"]
    # inflections match ("noting" a note, "messaged")
    routed = router.route("Power off my phone after noting my gym locker code 8812.", NOTES_POWER)
    assert routed[0] == "note-before-power-off" and len(routed) <= router.max_skills
    assert "messaging" in router.route(
        "If Jordan messaged me, reply 'ok'.", ["send_sms", "read_inbox", "lookup_contact"]
    )


def test_router_only_offers_available_skills_and_ignores_noise(router):
    # the request names a cast, but no cast tool is exposed: the skill is not available
    assert "screen-cast" not in router.route("Cast my screen to the TV.", SETTINGS)
    # words every tool shares (set, turn, off, phone) route nowhere
    assert router.route("Set it for me, then turn it off.", SETTINGS) == []
    # "switch off my alarm" is not a power-off request
    assert router.route(
        "Switch off my 7 o'clock wake-up alarm.",
        ["list_alarms", "create_alarm", "set_alarm_enabled", "power_off", "create_note"],
    ) == ["alarms"]


def test_a_generic_skill_needs_two_interfering_things(lib):
    router = SkillRouter(lib, max_skills=5)
    cast = ["get_cast_status", "start_cast", "stop_cast", *SETTINGS]
    assert "conflict-arbiter" not in router.route("Cast to the living room TV.", cast)
    combined = "Turn on do not disturb, then cast my screen to the TV, then power off."
    assert "conflict-arbiter" in router.route(combined, cast)


def test_router_explains_its_matches(router):
    why = router.explain("What is 100 meters in yards?")
    assert set(why["unit-conversion"]) >= {"meter", "yard"}


def test_router_is_fast(router):
    t0 = time.perf_counter()
    for _ in range(200):
        router.route("Before you turn off my phone, note that I took my meds at 9:30.", NOTES_POWER)
    assert (time.perf_counter() - t0) / 200 < 0.005


def test_keywords_are_validated():
    text = "---\nname: k\ndescription: d\nversion: '1'\nkeywords: ['  ']\n---\nbody\n"
    with pytest.raises(SkillError, match="keywords"):
        parse_skill(text, "k/SKILL.md")
    ok = parse_skill(text.replace("['  ']", "[yards, heart rate]"), "k/SKILL.md")
    assert ok.meta.keywords == ["yards", "heart rate"]


def test_asks_to_remember():
    assert asks_to_remember("Remember that my locker is 12.")
    assert asks_to_remember("Please don't forget I'm vegetarian")
    assert not asks_to_remember("Turn off the wifi.")
    assert not asks_to_remember("Write down that I parked on level 3.")  # a note, not a memory


def test_request_bound_note_applies_only_to_matching_requests(eta):
    filt = GuidanceFilter(eta)
    helper = "Have a clock helper create a 05:40 alarm labeled Flight."
    assert "subagent.artifacts" in filt.note_ids([], ["delegate"], request=helper)
    assert "subagent.artifacts" not in filt.note_ids([], ["delegate"], request="Create a 05:40 alarm.")
    assert "subagent.artifacts" not in filt.note_ids([], ["delegate"])  # no request: no request-bound note
    assert "subagent.artifacts" not in filt.note_ids([], [], request=helper)  # delegation not configured
    with pytest.raises(ValueError, match="regular expression"):
        RoutingNote(id="bad", text="t", when_request="(")


def test_compile_rejects_a_note_covered_by_an_unknown_skill(lib):
    tools, _ = sandbox_tool_apps()
    with pytest.raises(EtaError, match="covered by unknown skill"):
        compile_eta(tools, lib, [RoutingNote(id="x", text="t", covered_by=["no-such-skill"])])


def test_filter_index_leaves_out_skills_already_shown(eta):
    filt = GuidanceFilter(eta)
    cast = ["get_cast_status", "start_cast", "stop_cast"]
    assert "screen-cast:" in "\n".join(filt.guidance(cast, ["skills"]))
    shown = "\n".join(filt.guidance(cast, ["skills"], shown_skills=["screen-cast"]))
    assert "screen-cast:" not in shown
    assert "cast.one-at-a-time" in filt.note_ids(cast)
    assert "cast.one-at-a-time" not in filt.note_ids(cast, shown_skills=["screen-cast"])  # covered
    assert "Only one cast can be live" not in shown


def test_session_kwargs_per_request(eta, lib, router):
    kw = session_kwargs(
        eta,
        ["convert_units", "calculate"],
        library=lib,
        memory=True,
        delegate=True,
        request="What is 100 meters in yards?",
        router=router,
    )
    assert kw["preloaded"] == ["unit-conversion"]
    assert "memory_write" not in kw["actions"] and "memory_search" in kw["actions"]
    assert "load_skill" not in kw["actions"]  # the routed procedure is shown: nothing to load
    assert set(kw["actions"]) < set(ACTION_KINDS)
    assert kw["guidance"] == []
    text = "\n".join(kw["guidance_for"](["convert_units", "calculate"]))
    # the converter note says what the routed unit-conversion procedure says: left out
    assert "calculate with the standard factor" not in text
    assert "Skills (load_skill)" not in text and "Load the skill" not in text  # routed: no index, no load note
    assert "memory_search it" in text  # memory configured, nothing recalled
    unrouted = session_kwargs(eta, ["convert_units", "calculate"], library=lib, request="Do the thing.")
    assert unrouted["preloaded"] == [] and "load_skill" in unrouted["actions"]
    assert "calculate with the standard factor" in "\n".join(unrouted["guidance_for"](["convert_units", "calculate"]))
    # guidance follows the tools exposed at the time it is asked (after a load_skill)
    assert "calculate with the standard factor" not in "\n".join(unrouted["guidance_for"](["calculate"]))
    recalled = session_kwargs(
        eta,
        ["convert_units", "calculate"],
        library=lib,
        memory=True,
        request="How long is a 42 km route in the units I use?",
        recalled=["I think in miles, not kilometers."],
        memory_search=False,
    )
    text = "\n".join(recalled["guidance_for"](["convert_units", "calculate"]))
    # η without a memory section drops the recall note (MemorySettings.defaults()): the evidence says it
    assert "memory_search it" not in text and "memories shown with the request" not in text
    assert "memory_search" not in recalled["actions"]
    written = eta.model_copy(update={"memory": MemorySettings()})  # a section that leaves the switch out: the note
    noted = session_kwargs(written, ["convert_units", "calculate"], library=lib, memory=True,
                           request="How long is a 42 km route in the units I use?",
                           recalled=["I think in miles, not kilometers."], memory_search=False)
    text = "\n".join(noted["guidance_for"](["convert_units", "calculate"]))
    assert "memory_search it" not in text and "memories shown with the request" in text
    # recalled memories shown, store seeded: searching again stays offered (η memory.keep_search)...
    shown = session_kwargs(eta, ["convert_units", "calculate"], library=lib, memory=True,
                           request="How long is a 42 km route in the units I use?",
                           recalled=["I think in miles, not kilometers."], memory_search=True)
    assert "memory_search" in shown["actions"]
    # ...and with every memory switch off, no second search of the same request, under the earlier note
    legacy = eta.model_copy(update={"memory": MemorySettings.legacy()})
    shown = session_kwargs(legacy, ["convert_units", "calculate"], library=lib, memory=True,
                           request="How long is a 42 km route in the units I use?",
                           recalled=["I think in miles, not kilometers."], memory_search=True)
    assert "memory_search" not in shown["actions"]
    assert "recalled for this request" in "\n".join(shown["guidance_for"](["convert_units", "calculate"]))
    with pytest.raises(EtaError, match="another skill library"):
        session_kwargs(eta, [], library=lib, request="x", router=SkillRouter(SkillLibrary.builtin()))


def test_delegate_is_offered_only_when_the_request_asks_for_a_helper(eta, lib, router):
    assert asks_to_delegate("Have a clock helper create a 05:40 alarm labeled Flight.")
    assert asks_to_delegate("Ask a sub-agent to read my settings")
    assert not asks_to_delegate("Set an alarm for 6:30 called Flight.")
    names = ["create_alarm", "list_alarms", "set_alarm_enabled", "delete_alarm"]
    plain = session_kwargs(eta, names, library=lib, delegate=True, request="Set an alarm for 6:30 called Flight.",
                           router=router)
    helper = session_kwargs(eta, names, library=lib, delegate=True, router=router,
                            request="Have a clock helper create a 05:40 alarm labeled Flight.")
    assert "delegate" not in plain["actions"] and "delegate" in helper["actions"]
    # the delegation note follows the action: it is shown only where delegate is offered
    assert "subagent" not in " ".join(plain["guidance_for"](names)).lower()
    assert '"kind":"delegate"' in " ".join(helper["guidance_for"](names))


def test_routing_reads_recalled_memories(eta, lib):
    names = ["get_settings", "set_wifi", "set_do_not_disturb", "set_brightness"]
    bare = session_kwargs(eta, names, library=lib, request="I'm home now, do the home routine I asked for.")
    assert bare["preloaded"] == []
    kw = session_kwargs(
        eta,
        names,
        library=lib,
        request="I'm home now, do the home routine I asked for.",
        recalled=["Home routine: wifi on, do not disturb off, brightness 40."],
    )
    assert kw["preloaded"] == ["quick-settings"]


def test_a_revision_cannot_name_an_unknown_covering_skill(eta):
    from pocketpilot.adapters import AddNote, Revision, RevisionError, apply_revision

    bad = Revision(
        id="r1", base_version=eta.version, rationale="x",
        ops=[AddNote(note=RoutingNote(id="new.one", text="t", covered_by=["ghost"]))],
    )
    with pytest.raises(RevisionError, match="covered by unknown skill"):
        apply_revision(eta, bad)
    good = bad.model_copy(update={"ops": [AddNote(note=RoutingNote(id="new.one", text="t", covered_by=["alarms"]))]})
    assert apply_revision(eta, good).note("new.one").covered_by == ["alarms"]


def _german_library(tmp_path):
    folder = tmp_path / "wlan"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: wlan\ndescription: Schaltet das WLAN ein oder aus und stellt die Helligkeit ein\n"
        "version: '1'\nworld: sandbox\nrequires: [set_wifi]\n---\nRufe set_wifi auf.\n"
    )
    return SkillLibrary([*SkillLibrary.builtin().skills(), SkillLibrary.from_dir(tmp_path).get("wlan")])


def test_the_words_routing_ignores_are_eta_data_revised_for_another_language(tmp_path):
    from pocketpilot.adapters import apply_revision, diff_eta
    from pocketpilot.adapters.revision import Revision, SetStopWords

    lib = _german_library(tmp_path)
    tools, apps = sandbox_tool_apps()
    base = compile_eta(tools, lib, apps=apps)
    names = [t.name for t in tools]
    filler = "Spiel die Musik und das Hörbuch ab"  # shares only filler words with the skill
    real = "WLAN aus und Helligkeit hoch"
    english = session_kwargs(base, names, library=lib, request=filler)
    assert "wlan" in english["preloaded"]  # English stop words: "das", "und", "die" count as terms
    rev = Revision(id="de-stop", base_version=base.version, rationale="German app",
                   ops=[SetStopWords(add=["das", "die", "und", "der", "ein", "aus"])])
    german = apply_revision(base, rev)
    assert [c.section for c in diff_eta(base, german)] == ["stop_words"]
    assert german.version != base.version
    assert session_kwargs(german, names, library=lib, request=filler)["preloaded"] == []
    assert session_kwargs(german, names, library=lib, request=real)["preloaded"][:1] == ["wlan"]
    # removing them again restores the base η exactly
    back = apply_revision(german, Revision(id="undo", base_version=german.version, rationale="undo",
                                           ops=[SetStopWords(remove=["das", "die", "und", "der", "ein", "aus"])]))
    assert back.version == base.version
