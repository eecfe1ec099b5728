"""engram/serving/gc_tuning.py, in a fresh interpreter (the test process's collector is left alone): what
start-up built is frozen out of later collections, start-up's cyclic garbage is collected first, and the
young generation's threshold is raised while the older ones keep theirs."""

import subprocess
import sys

PROBE = """
import gc
import weakref
from engram.serving.gc_tuning import YOUNG_GC_THRESHOLD, tune_collector

class Node:
    pass

def cycle():
    a, b = Node(), Node()
    a.other, b.other = b, a
    return a

kept = cycle()   # alive: frozen with the rest
garbage = weakref.ref(cycle())  # start-up's cyclic garbage: collected before the freeze
before = gc.get_threshold()
gc.disable()     # no collection may run on its own between here and the counts below
tune_collector()
frozen = gc.get_freeze_count()
nodes = [o for o in gc.get_objects() if isinstance(o, Node)]
print(frozen, len(nodes), garbage() is None, kept.other.other is kept)
print(before[1:] == gc.get_threshold()[1:], gc.get_threshold()[0] == YOUNG_GC_THRESHOLD)
"""


def test_tune_collector_freezes_start_up_and_raises_the_young_threshold():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True).stdout
    frozen, listed_nodes, garbage_collected, kept_alive, older_kept, young_raised = out.split()
    assert int(frozen) > 1000  # the interpreter and engram's imports
    assert garbage_collected == "True" and kept_alive == "True"
    assert listed_nodes == "0"  # the live cycle is frozen: no generation the collector walks holds it
    assert older_kept == "True" and young_raised == "True"
