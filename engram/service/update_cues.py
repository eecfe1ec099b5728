"""The words that tell an update from a restatement and an event from a plan, for the restatement rule of
supersession.py (docs/internals.md#supersession). All of them English, as the resolver of relative dates
(engram/search/dates.py) and the eval that chose the thresholds are: a text in another language names no
relative date the rule can see and reports no change it can hear, so it keeps the plain similarity floor.

- `reports_change(newer, older)`: the newer memory reports a change of state, so it may restate the older at
  a lower similarity (Restatements.change_similarity). Either a cue word ("now", "no longer", "moved",
  "switched", "replaced", a completed passive "was switched off", ...: `_CHANGE`), or, by rule rather than
  by name, a completed action on the older memory's subject: a past-tense verb form (regular "-ed", or an
  irregular past from `_IRREGULAR`) whose subject, the words before it, is named in the older memory and is
  specific (two analyzer terms at least: "pocket-app 3.0 shipped" against "pocket-app 3.0 planning: ...").
  A lone name ("Dana found ...", "Zoë shipped ...") is not specific enough: people and services appear in
  many memories that a new act of theirs does not replace (measured: docs/benchmarks.md#stale-leaks).
- `names_what_changed(newer, older)`: stronger evidence than a change reported, a change *of a thing the
  older memory names, in what the older memory says of it*: within one clause of the newer memory, a verb
  of transition (`_TRANSITION`: "moved", "replaces", "was switched off", "started", ...; not the adverbs
  "now", "instead", which mark a present state without saying which state it ends) whose object (its
  words after it, up to the first preposition) holds at least two words, and at least half of its words,
  the older memory names ("the team ... replaces written weekly status with a 10-minute video" against
  "weekly status updates ..."); or whose subject (the clause's words before it) is specific and named in
  the older memory (two analyzer terms at least, every one of them in the older memory) *and* whose
  predicate the older memory names too: the verb's stem or a word of what follows it to the end of its
  sentence, the subject's own words and dates left out ("ci-old.harbor.net was switched off" against
  "ci-old.harbor.net will be switched off once ...", "switch"; "search-indexer's hybrid search is now
  enabled for all customers, with k-NN on ..." against an A/B result of "BM25 plus k-NN", "k-nn"). A
  subject named is not enough: "billing-service moved to Go 1.23" changes one thing about billing-service
  and leaves "Don't suggest ORMs for billing-service" true, and the older memory names no part of "moved
  to Go 1.23". The object is counted in words, not terms, so one hyphenated name ("pocket-app", three
  terms) does not pass as two things named. Such an update rarely shares the older memory's wording
  (cosines 0.35-0.52 on the eval), so supersession.py lets it restate at a lower similarity, relevance
  and keyword share (Restatements.named_*; docs/benchmarks.md#stale-leaks).
- `reports_event(text)`: the text dates what it tells relative to when it was written in the past or
  present ("yesterday", "last Friday", "two weeks ago", "this morning"): an event, which stays true whatever
  is said later. A memory whose only relative dates point ahead ("next month", "tomorrow", "in two
  weeks", or "on Friday" / "this week" beside a future marker such as "will" or "planning to") states a
  plan, and a plan goes stale when a newer memory on the same subject says otherwise.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..search.analyzer import terms
from ..search.dates import ABSOLUTE_DATE, NUMBERS, WEEKDAYS, names_relative_date

# Words of an update: a state that changed, ended or began (folded, as engram/search/analyzer.py folds).
# The adverbs mark a state as the present one ("X now uses Y") without saying which state it ends ...
_CHANGE_ADVERBS = r"now|no longer|any ?more|instead"
# ... the verbs name a transition of their subject or object ("ci-old.harbor.net was switched off",
# "replaces written weekly status"), which is what names_what_changed reads
_TRANSITION = re.compile(
    r"\b(?:finish(?:ed|es)?|complet(?:ed|es)|switch(?:ed|es)|mov(?:ed|es)"
    r"|migrat(?:ed|es)|replac(?:ed|es)|start(?:ed|s)|stopp?(?:ed|s)|chang(?:ed|es)|upgrad(?:ed|es)"
    r"|downgrad(?:ed|es)|renam(?:ed|es)|became|enabled|disabled|retired|decommissioned|cancell?ed"
    r"|postponed|rescheduled|took over|takes over|handed over)\b"
    r"|\b(?:was|were|has been|have been|got)\s+\w+(?:ed|en)\b"  # a completed action: "were fitted"
)
_CHANGE = re.compile(r"\b(?:" + _CHANGE_ADVERBS + r")\b|" + _TRANSITION.pattern)
_WORD = re.compile(r"[a-z]+")
# Irregular past and past-participle forms of verbs of action (a small list: no inflection library ships
# with engram); forms that equal their present ("put", "set", "cut", "read") are left out, being ambiguous.
_IRREGULAR = frozenset((
    "became", "began", "begun", "broke", "broken", "brought", "built", "bought", "came", "caught", "chose",
    "chosen", "drew", "drawn", "drove", "driven", "fell", "fallen", "fought", "flew", "flown", "forgot",
    "forgotten", "froze", "frozen", "gave", "given", "went", "gone", "grew", "grown", "got", "gotten",
    "held", "hid", "hidden", "kept", "knew", "known", "laid", "led", "left", "lent", "lost", "made", "met",
    "paid", "ran", "rang", "rose", "risen", "sent", "sold", "shook", "shot", "shown", "spent", "spoke",
    "spoken", "stood", "stole", "stolen", "struck", "swore", "sworn", "took", "taken", "taught", "tore",
    "torn", "told", "threw", "thrown", "understood", "undid", "undone", "woke", "woken", "wore", "worn",
    "won", "wrote", "written", "withdrew", "withdrawn"
))  # fmt: skip
# "-ed" words that are no completed action: participles of intent ("planned for May" is a plan) and words
# that merely end so; "-eed" words are rarely past forms ("need", "speed"), except these
_NOT_DONE = frozenset((
    "planned", "scheduled", "expected", "proposed", "intended", "supposed", "hundred", "naked", "wicked",
    "sacred"
))  # fmt: skip
_PAST_EED = frozenset(("agreed", "freed", "guaranteed"))
_MIN_SUBJECT_TERMS = 2
# A clause: what one verb of transition can be about ("...: the team stops X, replaces Y with Z, and
# keeps W"; "Noor confirmed that X is now enabled"). A dot ends one only before a space, so
# "ci-old.harbor.net" and "8.0.36" stay whole.
_CLAUSE = re.compile(r"[;:,()!?]|\.(?:\s|$)|\s(?:and|but|while|whereas|so|then|that|which|who)\s")
# where the object of a verb of transition ends: "replaces written weekly status | with a 10-minute video"
_PREPOSITION = re.compile(r"\s(?:with|to|from|for|on|in|at|by|after|before|because|since|until|into|as|of)\s")
# terms that belong to the change, not to what changed ("X is now enabled": X is the subject)
_ADVERB_TERMS = frozenset(terms("now no longer anymore instead"))
# where the predicate of a verb of transition ends: its sentence ("... is now enabled for all customers,
# with k-NN on 768-dim vectors." is one predicate; a comma there parts the verb's complements, not
# clauses). A dot ends one only before a space, as in _CLAUSE.
_SENTENCE = re.compile(r"[;:!?]|\.(?:\s|$)")
# the auxiliary of a completed action ("got fitted"), which says nothing of what changed
_AUXILIARY_TERMS = frozenset(terms("got"))

_COUNT = r"(?:\d{1,3}|" + "|".join(NUMBERS) + r")"
# relative dates that point ahead by themselves ...
_AHEAD = re.compile(
    r"\b(?:the day after tomorrow|tomorrow|next (?:week|weekend|month|year|" + "|".join(WEEKDAYS) + r")"
    r"|in " + _COUNT + r" (?:day|week|month|year)s?)\b"
)
# ... and those that do beside a future marker ("on Friday I will", "planning to ... this week")
_AHEAD_IF_PLANNED = re.compile(r"\b(?:on|this) (?:week|weekend|month|year|" + "|".join(WEEKDAYS) + r")\b")
_FUTURE_MARKER = re.compile(
    r"\b(?:will|shall|going to|plan(?:s|ned|ning)? to|scheduled (?:to|for)|intends? to)\b|\w'll\b"
)


def reports_change(folded_newer: str, older_text: str) -> bool:
    """Whether the newer memory's (folded) text reports a change of state of what the older one says."""
    if _CHANGE.search(folded_newer) is not None:
        return True
    subject = _done_subject(folded_newer)
    return subject is not None and len(subject) >= _MIN_SUBJECT_TERMS and subject <= set(terms(older_text))


def names_what_changed(folded_newer: str, older_text: str) -> bool:
    """Whether a clause of the newer memory's (folded) text reports a transition of a thing the older
    memory names, in what the older memory says of it (most of its object named there, or its subject
    specific and named there and a term of its predicate too)."""
    named = _terms_of(older_text)
    for subject, words, predicate in _transitions(folded_newer):
        hits = sum(found <= named for found in words)
        if hits >= _MIN_SUBJECT_TERMS and 2 * hits >= len(words):
            return True
        # a change of the subject restates what the older memory says of that subject's changed attribute
        # only, not every memory naming the subject: the older memory names the predicate too
        if len(subject) >= _MIN_SUBJECT_TERMS and subject <= named and not predicate.isdisjoint(named):
            return True
    return False


# texts analysed and kept: a few pools' worth (a pool is 30 memories); bounded in bytes too, a memory text
# being at most 30 kB (store/prepared_memories.py), so at worst some 15 MB a cache
_CACHED = 512


# The rule reads each pool memory against many others (a 30-candidate pool is up to 435 pairs), so each
# text is analysed once and the analyses kept for the next queries too (bounded; memory texts repeat
# across queries of one space).
@lru_cache(maxsize=_CACHED)
def _terms_of(text: str) -> frozenset[str]:
    return frozenset(terms(text))


@lru_cache(maxsize=_CACHED)
def _transitions(
    folded: str,
) -> tuple[tuple[frozenset[str], tuple[frozenset[str], ...], frozenset[str]], ...]:
    """Per verb of transition in the text, by clause: its subject's content terms, its object's words' and
    its predicate's (the verb's stem and the rest of its sentence, but the subject's terms and dates)."""
    found = []
    start = 0
    for boundary in (*_CLAUSE.finditer(folded), None):
        end = len(folded) if boundary is None else boundary.start()
        clause = folded[start:end]
        for match in _TRANSITION.finditer(clause):
            subject = _content_terms(clause[: match.start()])
            object_ = _PREPOSITION.split(clause[match.end() :], maxsplit=1)[0]
            words = tuple(word for word in map(_content_terms, object_.split()) if word)
            rest = _SENTENCE.split(folded[start + match.end() :], maxsplit=1)[0]
            predicate = _content_terms(match.group()) - _AUXILIARY_TERMS
            predicate |= _content_terms(ABSOLUTE_DATE.sub(" ", rest))
            found.append((subject, words, predicate - subject))
        if boundary is not None:
            start = boundary.end()
    return tuple(found)


def _content_terms(text: str) -> frozenset[str]:
    """The text's analyzer terms but single letters (a possessive's "s") and the change adverbs."""
    return frozenset(term for term in terms(text) if len(term) > 1 and term not in _ADVERB_TERMS)


def reports_event(folded_text: str) -> bool:
    """Whether the (folded) text dates what it tells in the past or present (not only ahead of it)."""
    if not names_relative_date(folded_text):
        return False
    rest = _AHEAD.sub(" ", folded_text)
    if _FUTURE_MARKER.search(folded_text):
        rest = _AHEAD_IF_PLANNED.sub(" ", rest)
    return names_relative_date(rest)


def _done_subject(folded_text: str) -> set[str] | None:
    """The analyzer terms before the text's first past-tense verb form (its subject), None without one."""
    for match in _WORD.finditer(folded_text):
        if _is_past(match.group()):
            return set(terms(folded_text[: match.start()]))
    return None


def _is_past(word: str) -> bool:
    if word in _IRREGULAR:
        return True
    if len(word) < 5 or not word.endswith("ed") or word in _NOT_DONE:
        return False
    return not word.endswith("eed") or word in _PAST_EED
