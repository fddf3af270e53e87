"""Secrets never reach the shared tier or an export, however they are phrased.

Each case names the secret value that must vanish. The phrasings vary the cue word, the
separator (is, :, =, dash, 's, nothing), case, spacing inside digit groups, quotes, and the
order (code first); key formats come with and without a label, and an unlabelled random
key is caught by entropy alone.
"""

from __future__ import annotations

import json

import pytest
from _adv_memory_support import POLICY, svc, user

from pocketpilot.contracts import CriterionResult, Finish, ToolResult, Verdict
from pocketpilot.memory import MemoryCandidate, Provenance, Redactor, SqliteMemory
from pocketpilot.memory.export import redact_row
from pocketpilot.memory.redaction import redact_secrets
from pocketpilot.trainer_bridge.export_rl import rollout
from pocketpilot.trainer_bridge.export_sft import sft_record
from pocketpilot.trainer_bridge.export_synthetic import make_episode

SECRETS = [
    ("alice's wifi password is hunter2!", "hunter2"),
    ("ALICE'S WIFI PASSWORD IS HUNTER2", "HUNTER2"),
    ("Wi-Fi password: Tr0ub4dor&3", "Tr0ub4dor&3"),
    ("router pwd = s3cr3t-router", "s3cr3t-router"),
    ("my passcode's 271828", "271828"),
    ("the password to the garage door opener is 'blue fish 77'", "blue fish 77"),
    ("password hunter2", "hunter2"),
    ("Passwort... no, password — Kangaroo#19", "Kangaroo#19"),
    ("my bank PIN is 4921", "4921"),
    ("the PIN for my card is 4 9 2 1", "4 9 2 1"),
    ("PIN-code: 0000", "0000"),
    ("sim pin 1357", "1357"),
    ("unlock code is 8 8 2 2 1 1", "8 8 2 2 1 1"),
    ("Your verification code is 839-201", "839-201"),
    ("482913 is your Google verification code", "482913"),
    ("OTP 554433", "554433"),
    ("one-time passcode: 741852", "741852"),
    ("use code G-482913 to sign in", "482913"),
    ("2FA code=118811", "118811"),
    ("card number 4111-1111-1111-1111", "4111-1111-1111-1111"),
    ("pay with 5500 0000 0000 0004 please", "5500 0000 0000 0004"),
    ("4111.1111.1111.1111 exp 09/27", "4111.1111.1111.1111"),
    ("cvv is 123", "123"),
    ("IBAN DE89 3704 0044 0532 0130 00", "3704 0044"),
    ("iban: gb82 west 1234 5698 7654 32", "1234 5698"),
    ("send it to FR1420041010050500013M02606", "20041010050500013"),
    ("API key sk-proj-abcDEF1234567890xyzQRS", "abcDEF1234567890xyzQRS"),
    ("export OPENAI_API_KEY=sk-abc123def456ghi789jkl", "abc123def456ghi789jkl"),
    ("aws AKIAIOSFODNN7EXAMPLE is the access key id", "AKIAIOSFODNN7EXAMPLE"),
    ("github token ghp_16C7e42F292c6912E7710c838347Ae178B4a", "16C7e42F292c6912E7710c838347Ae178B4a"),
    ("slack xoxb-123456789012-abcdefABCDEF", "123456789012-abcdefABCDEF"),
    ("bearer token: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N", "eyJhbGciOiJIUzI1NiJ9"),
    ("client secret = 9f8A7b6C5d4E3f2G1h0JkLmN", "9f8A7b6C5d4E3f2G1h0JkLmN"),
    ("here you go: Qm9vdHN0cmFwS2V5XzIwMjQ6c2VjcmV0", "Qm9vdHN0cmFwS2V5XzIwMjQ6c2VjcmV0"),
    ("wifi key = Qz7-pL2-xR9", "Qz7-pL2-xR9"),
]
HARMLESS = [
    "reset my password", "password reset link sent", "pin the chat to the top", "the code compiles",
    "Turn on airplane mode at 10:30", "set volume to 5", "battery at 45%", "version 2.3.1",
    "Enable Do Not Disturb on Monday", "IMG_20240101_123456.jpg saved", "com.android.settings/.Settings",
    "Task: turn on wifi. Outcome: finish, verified success (100% of criteria).", "token ring network",
    "order 12345 shipped", "episode 9c4f0e2a8b7d4e1f9a3b5c6d7e8f9012 finished",
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_secret_is_redacted_for_export_and_the_shared_tier(text, secret):
    for out in (redact_secrets(text), Redactor().redact(text).text):
        assert secret not in out and secret.lower() not in out.lower(), out
        assert "[SECRET]" in out or "[ID]" in out


@pytest.mark.parametrize("text", HARMLESS)
def test_harmless_text_is_left_alone(text):
    assert redact_secrets(text) == text


def test_the_reported_case_never_reaches_the_shared_store(tmp_path):
    with SqliteMemory(tmp_path / "shared.db", POLICY, shared=True) as shared:
        for text, secret in SECRETS:
            res = shared.write(svc("alice"), MemoryCandidate(
                content=text, provenance=Provenance(source="episode", evidence=f"note: {text}")))
            item = shared.get(user("bob"), res.id)
            assert secret not in item.content and secret not in (item.provenance.evidence or "")
        raw = (tmp_path / "shared.db").read_bytes()
        assert b"hunter2" not in raw and b"4921" not in raw


def test_export_rows_drop_the_secret_and_the_tokens_that_spell_it():
    ok = Verdict(success=True, criteria=[CriterionResult(name="a", passed=True)])
    episode = make_episode(
        [{"calls": [("send_message", {"to": "Sam", "text": "wifi password is hunter2"})],
          "results": [ToolResult.success({"sent": True})]},
         {"calls": [("set_wifi", {"enabled": False})], "results": [ToolResult.success({"wifi": False})]},
         {"action": Finish(summary="Told Sam the password hunter2."), "results": []}],
        verdict=ok,
    )
    sft = redact_row(sft_record(episode).row())
    rl = redact_row(rollout(episode).model_dump(mode="json"))
    assert "hunter2" not in json.dumps(sft) and "hunter2" not in json.dumps(rl)
    assert sft["id"] == episode.header.episode_id  # ids are not text to redact
    turns = {t["step"]: t for t in rl["turns"]}
    assert turns[0]["token_ids"] == [] and turns[0]["token_logprobs"] == []  # the raw output held the secret
    assert turns[1]["token_ids"] and turns[1]["token_logprobs"]  # a turn without a secret keeps its tokens
    assert turns[2]["token_ids"] == []
