"""The English words that tell the restatement rule an update from a restatement and a plan from a dated
event (engram/service/update_cues.py), and what they change in the rule (engram/service/supersession.py)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from engram.search.analyzer import fold
from engram.service.supersession import Restatements, newer_first
from engram.service.update_cues import names_what_changed, reports_change, reports_event


@pytest.mark.parametrize(
    ("text", "event"),
    [
        ("I went to the support group yesterday.", True),
        ("The disk failed two weeks ago.", True),
        ("On Friday we deployed the new build.", True),  # "on <weekday>" is the one before, by default
        ("kube-fra1 was upgraded to 1.28; kube-ams2 follows next month.", False),  # only ahead: a plan
        ("The release is tomorrow.", False),
        ("In two weeks the contract ends.", False),
        ("On Friday I will deploy the new build.", False),  # ahead beside a future marker
        ("We are planning to migrate this week.", False),
        ("The disk failed yesterday; we will replace it next week.", True),  # a past event is in it
        ("Staging runs Postgres 15.4.", False),  # no date: a state
        ("Le disque est tombé en panne hier.", False),  # no English date the resolver reads
    ],
)
def test_only_dates_in_the_past_or_present_make_a_dated_event(text, event):
    assert reports_event(fold(text)) is event


@pytest.mark.parametrize(
    ("newer", "older", "change"),
    [
        ("Kwame now receives storage pages first", "Storage pages go to Ingrid first", True),  # a cue word
        ("The winter tyres were fitted on 2026-11-07", "Winter tyres are in the garage", True),
        # a past-tense verb, regular or irregular, after a specific subject the older memory names
        ("pocket-app 3.0 shipped to both stores", "pocket-app 3.0 planning: the app moves to Expo", True),
        ("The billing contract ended with Acme", "The billing contract with Acme runs to May", True),
        ("The Lofoten winter trip is booked for February", "Saving for a Lofoten winter trip", True),
        ("Search-indexer reindex went faster", "search-indexer reindex takes 3 h", True),
        # a lone name is not specific: a new act of a person does not replace what else is said of them
        ("Dana shipped the new sidebar", "Dana prefers pnpm", False),
        # the subject is not what the older memory is about
        ("pocket-app 3.0 shipped to both stores", "web-dashboard targets evergreen browsers", False),
        # intent is not completion, and a present statement reports nothing done
        ("pocket-app 3.0 planned for May", "pocket-app 3.0 planning: the app moves to Expo", False),
        ("pocket-app 3.0 uses Expo Router", "pocket-app 3.0 planning: the app moves to Expo", False),
    ],
)
def test_an_update_is_a_cue_word_or_a_completed_action_on_the_older_subject(newer, older, change):
    assert reports_change(fold(newer), older) is change


def _memory(row, created_ms, text):
    return SimpleNamespace(row_id=row, uri=f"at://x/m/{row}", rkey=f"r{row}", created_ms=created_ms,
                           attrs={}, text=text)  # fmt: skip


def _pair(cosine):
    a = np.array([1.0, 0.0], dtype=np.float32)
    b = np.array([cosine, math.sqrt(1 - cosine * cosine)], dtype=np.float32)
    return {1: a, 2: b}


def test_a_plan_goes_stale_and_a_dated_event_does_not():
    """At a cosine above min_similarity a newer memory replaces an older plan ("next month"), but never an
    older report of a dated event ("last month")."""
    rule = Restatements(0.65, 0.5, 0.0, change_similarity=0.55)
    newer = "kube-ams2 was upgraded from 1.27 to 1.28"
    for older, replaces in [
        ("kube-fra1 is on 1.28; kube-ams2 follows next month", True),
        ("kube-fra1 was upgraded to 1.28 last month", False),
    ]:
        memories = {1: _memory(1, 100, older), 2: _memory(2, 200, newer)}
        order, replaced = newer_first([(1, 0.9), (2, 0.8)], memories, _pair(0.7), rule)
        assert (replaced == {1: 2}) is replaces, older
        assert order == ([2, 1] if replaces else [1, 2])


def test_a_completed_action_on_the_same_subject_restates_at_the_change_similarity():
    """At cosine 0.6 (between change_similarity 0.55 and min_similarity 0.65) "pocket-app 3.0 shipped"
    replaces the 3.0 plan, but not at 0.5, and not without change_similarity (the e5 policy)."""
    memories = {
        1: _memory(1, 100, "pocket-app 3.0 planning: the app moves to Expo Router"),
        2: _memory(2, 200, "pocket-app 3.0 shipped to both stores on 2026-11-10"),
    }
    ranked = [(1, 0.9), (2, 0.8)]
    rule = Restatements(0.65, 0.5, 0.0, change_similarity=0.55)
    assert newer_first(ranked, memories, _pair(0.6), rule)[1] == {1: 2}
    assert newer_first(ranked, memories, _pair(0.5), rule)[1] == {}
    assert newer_first(ranked, memories, _pair(0.6), Restatements(0.65, 0.5, 0.0, None))[1] == {}


@pytest.mark.parametrize(
    ("newer", "older", "named"),
    [
        # the subject of a transition, specific and every term of it in the older memory, and its predicate
        # named there too: the verb's stem ("switch") ...
        ("Tariq finished the migration, and ci-old.harbor.net was switched off on 2026-03-21",
         "The Jenkins controller ci-old.harbor.net will be switched off once pipelines move", True),
        # ... or a word of what follows the verb to the end of its sentence, past a comma ("k-NN")
        ("Noor confirmed that search-indexer's hybrid search is now enabled for all customers, with k-NN",
         "Hybrid search A/B result: k-NN won in search-indexer's experiment", True),  # "that" starts a clause
        ("redis-sessions was upgraded from 7.0.12 to 7.2.4", "redis-sessions runs 7.0.12 on three nodes", True),
        # a change of another attribute of the same subject: the older memory names the subject only
        ("redis-sessions was upgraded from 7.0.12 to 7.2.4", "redis-sessions is owned by the platform team",
         False),
        ("Tariq finished the migration, and ci-old.harbor.net was switched off on 2026-03-21",
         "The Jenkins controller ci-old.harbor.net has 4 executors", False),
        ("Noor confirmed that search-indexer's hybrid search is now enabled for all customers",
         "Hybrid search A/B result in search-indexer's experiment", False),
        # the date of a change is not what changed, nor is the subject's own word repeated after the verb
        ("billing-service moved to Go 1.23 on 2026-06-04", "billing-service deploys froze on 2026-06-04",
         False),
        ("The orders database was upgraded to MySQL 8.0.36 on db-orders-01.fra1",
         "Backups of the orders database run every Sunday", False),
        # a predicate named in another sentence than the transition's is not its predicate
        ("billing-service moved to Go 1.23. Marcus reviews the tests.", "billing-service tests are reviewed",
         False),
        # most of the object's words named: "written weekly status", two of three words
        ("The team stops the demo day, replaces written weekly status with a video",
         "Aiko wants weekly status updates posted on Fridays", True),
        # a subject not wholly named: the orders database's *replica* moved, not the database
        ("The orders database replica moved to db-orders-03", "The orders database was upgraded to 8.0.36",
         False),
        # an adverb marks a present state, not what it ends: "now" is no transition
        ("billing-service now uses PGO", "billing-service's invoice query takes 4 ms", False),
        # one hyphenated name in the object is one word named, not three
        ("José finished the pocket-app 3.0 designs", "José takes pocket-app native work back over", False),
        # a past tense that is no transition ("returned") names nothing changed
        ("search-indexer returned duplicate hits", "search-indexer's cold indices move to UltraWarm", False),
        # the thing named is in another clause than the transition
        ("Dana moved to Rotterdam; the Jenkins controller has 4 executors",
         "The Jenkins controller ci-old.harbor.net is slow", False),
    ],
)  # fmt: skip
def test_a_transition_of_a_thing_the_older_memory_names(newer, older, named):
    assert names_what_changed(fold(newer), older) is named


def test_a_transition_of_a_named_thing_restates_below_the_change_floor_and_relevance():
    """The newer "ci-old.harbor.net was switched off" replaces the note that it will be at cosine 0.4
    (below change_similarity) and at 0.4 of its relevance (below min_relevance), not below named_similarity
    or named_relevance, nor without the tier; a newer memory at those numbers without the words does not,
    nor does the transition replace a note on another attribute of ci-old.harbor.net (its executors)."""
    older = "The Jenkins controller ci-old.harbor.net will be switched off once the last pipelines move"
    switched = "The CI migration finished, and ci-old.harbor.net was switched off on 2026-03-21"
    unrelated = "The CI migration finished, and all pipelines run on GitLab CI"
    rule = Restatements(0.65, 0.5, 0.5, change_similarity=0.55, named_similarity=0.3, named_relevance=0.3,
                        named_keyword=0.3)  # fmt: skip
    keyword = {1: 0.4, 2: 0.16}

    def replaced(newer, cosine, relevance, rule=rule, older=older):
        memories = {1: _memory(1, 100, older), 2: _memory(2, 200, newer)}
        return newer_first([(1, 0.5), (2, 0.5 * relevance)], memories, _pair(cosine), rule, keyword)[1]

    assert replaced(switched, 0.4, 0.4) == {1: 2}
    assert replaced(switched, 0.25, 0.4) == {}
    assert replaced(switched, 0.4, 0.25) == {}
    assert replaced(unrelated, 0.4, 0.4) == {}
    assert replaced(switched, 0.4, 0.4, Restatements(0.65, 0.5, 0.5, change_similarity=0.55,
                                                     named_similarity=None)) == {}  # fmt: skip
    assert (
        replaced(switched, 0.4, 0.4, older="The Jenkins controller ci-old.harbor.net has 4 executors") == {}
    )
    # the keyword share has its own floor: 0.1 of the older's is too little
    memories = {1: _memory(1, 100, older), 2: _memory(2, 200, switched)}
    assert newer_first([(1, 0.5), (2, 0.2)], memories, _pair(0.4), rule, {1: 0.4, 2: 0.04})[1] == {}
