"""What the tests share: fakes of the network edge, engram processes, worlds of signed-in members,
helpers per area. Test modules import from here, never from each other (tests/app/test_test_imports.py)."""
