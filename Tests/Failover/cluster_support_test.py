"""Unit tests of the failover tests' own helpers (no cluster): run with
`python -m unittest Tests/Failover/cluster_support_test.py`."""
import os, sys, tempfile, unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_support import json_lines  # noqa: E402


class JSONLinesTests(unittest.TestCase):
    def written(self, text):
        handle = tempfile.NamedTemporaryFile("w", delete=False, suffix=".log")
        handle.write(text)
        handle.close()
        self.addCleanup(os.unlink, handle.name)
        return handle.name

    def test_a_line_still_being_written_is_not_read_yet(self):
        # A child writing its log: the reader caught it half-way through a line (CI,
        # 9cbf721: "Expecting value: line 1 column 23").
        path = self.written('{"op": "event", "n": 1}\n{"op": "event", "n": ')
        self.assertEqual(json_lines(path), [{"op": "event", "n": 1}])

    def test_complete_lines_and_blank_lines(self):
        path = self.written('{"a": 1}\n\n{"b": 2}\n')
        self.assertEqual(json_lines(path), [{"a": 1}, {"b": 2}])

    def test_an_empty_log(self):
        self.assertEqual(json_lines(self.written("")), [])


if __name__ == "__main__":
    unittest.main()
