"""Several guards reacting to one step: the agent gets one message, the strongest action, the texts
combined once each; every verdict is still recorded."""

from __future__ import annotations

from otelguard.model.actions import Action
from otelguard.reactions.delivery import one_message
from otelguard.model.records import Verdict


def verdict(guard: str, action: Action, message: str | None) -> Verdict:
    return Verdict(guard, "v", "r", action, message)


def test_the_strongest_action_carries_every_text_once_its_own_first():
    reminder = verdict("repeat-tool-reminder", Action.REMIND, "Stop repeating.")
    steer = verdict("no-progress", Action.STEER, "You are in a cycle.")
    again = verdict("other", Action.WARN, "Stop repeating.")
    combined = one_message([reminder, steer, again])
    assert (combined.guard, combined.action) == ("no-progress", Action.STEER)
    assert combined.message == "You are in a cycle.\n\nStop repeating."


def test_a_single_reaction_goes_as_it_is():
    alone = verdict("no-progress", Action.REMIND, "A cycle.")
    assert one_message([alone]) is alone


def test_a_cancel_goes_alone():
    cancel = verdict("thinking-loop-guard", Action.CANCEL, "thinking-loop")
    assert one_message([verdict("no-progress", Action.REMIND, "A cycle."), cancel]) is cancel


def test_equal_actions_keep_the_first_guard():
    first, second = verdict("a", Action.REMIND, "one"), verdict("b", Action.REMIND, "two")
    assert one_message([first, second]) == verdict("a", Action.REMIND, "one\n\ntwo")
