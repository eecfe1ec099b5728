"""The one MCP prompt: how an agent should use the memory tools (served as `use_memory`)."""

USAGE_PROMPT = """\
You have a long-term memory through the engram tools. Use it like a careful colleague's notebook.

Before answering:
- Call `recall` with a short natural-language query whenever the answer may depend on something the user
  said before (preferences, names, projects, decisions, dates). Prefer mode "hybrid" (the default); it
  matches exact names and ids as well as meaning.
- Trust a hit only as far as its text goes; check `createdAt` when facts may have changed.

When to remember:
- Call `remember` for durable facts, preferences, decisions and commitments, not for small talk.
- Write each memory so it stands alone: who, what, and when, in one or two sentences.
- Add a few short `tags` (a project, a person, a topic) so `recall` and `list_memories` can filter.
- Remembering the same text twice is harmless: you get the existing memory back (duplicate=true).

Corrections:
- When a memory is wrong or the user asks you to forget it, call `forget` with its uri, then `remember`
  the corrected fact.

Spaces:
- `list_spaces` shows the spaces you can use and which one `remember` writes to by default. You never need
  to name a space unless you have several.
"""
