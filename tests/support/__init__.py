"""What the tests share and are not tests themselves: fixture plugins loaded by `tests/conftest.py`
(`harness_fixtures`, `backend_fixtures`) and helper modules imported by name (`from tests.support.tiny_llava
import build_tiny_llava`), also by the bench scripts."""
