"""Real agentik processes for the tests.

``go test ./cmd/agentik -run PythonSDK`` builds the binary, starts a
scripted model (llmtest) and runs these tests with AGENTIK_BIN (the binary)
and AGENTIK_TEST_LLM_URL (the model) set. The model's script, by the last
user text:

- ``hello``: "Hello, world" in the chunks "Hel", "lo, ", "world"; usage 7 + 3
- ``fail``: HTTP 400 from the model, so the turn fails with ``llm_error``
- ``time?``: calls the ``current_time`` tool, then "It is tea time."
- ``hang``: streams "partial", then never finishes (interrupt it)
- ``history``: "you said: " and every user text of the conversation, joined
  by " | " (shows what the model was given)
- ``pick a number``: "Number <n>." with the next n each time it is asked
  (a regenerated answer differs from the first)
- anything else: "echo: <text>"
"""

import os
import re
import signal
import subprocess
import tempfile
import threading
import unittest
from typing import Dict, List, Optional

BIN = os.environ.get("AGENTIK_BIN", "")
LLM_URL = os.environ.get("AGENTIK_TEST_LLM_URL", "")

_LISTENING = re.compile(r'msg="agentik listening" addr=(\S+)')


def require_server() -> None:
    """Skips the calling test class when not run through go test (which
    fails when anything is skipped)."""
    if not BIN or not LLM_URL:
        raise unittest.SkipTest("AGENTIK_BIN and AGENTIK_TEST_LLM_URL are not set: run go test ./cmd/agentik -run PythonSDK")


class Server:
    """One agentik process. ``start`` returns once it listens; ``stop`` and
    ``start`` again restart it on the same port and database."""

    def __init__(self, env: Optional[Dict[str, str]] = None, *, model: str = "llmtest") -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="agentik-py-")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTIK_", "OPENAI_"))}
        self.env.update({"AGENTIK_HOST": "127.0.0.1", "AGENTIK_DB_PATH": os.path.join(self._dir.name, "agentik.db")})
        if model == "demo":
            self.env["AGENTIK_LLM_BACKEND"] = "demo"
        else:
            self.env["OPENAI_BASE_URL"] = LLM_URL
        self.env.update(env or {})
        self.port = 0
        self.proc: Optional["subprocess.Popen[str]"] = None
        self._reader: Optional[threading.Thread] = None
        self._log: List[str] = []
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        env = dict(self.env, AGENTIK_PORT=str(self.port))
        proc = subprocess.Popen([BIN, "serve"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        listening = threading.Event()
        addr: List[str] = []

        def read() -> None:
            assert proc.stderr is not None
            with proc.stderr:
                for line in proc.stderr:
                    with self._lock:
                        self._log.append(line)
                    m = _LISTENING.search(line)
                    if m and not listening.is_set():
                        addr.append(m.group(1))
                        listening.set()
            listening.set()  # exited: start reports it

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        if not listening.wait(timeout) or not addr:
            proc.kill()
            proc.wait()
            reader.join()
            raise RuntimeError("agentik did not start:\n" + self.log())
        self.proc, self._reader = proc, reader
        self.port = int(addr[0].rsplit(":", 1)[1])

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        """Signals the process and waits for it to exit; returns its exit code."""
        proc, self.proc = self.proc, None
        if proc is None:
            return 0
        proc.send_signal(sig)
        return self._wait(proc, timeout)

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def wait(self, timeout: float = 30.0) -> int:
        """Waits for the process to exit (after signal); returns its exit code."""
        proc, self.proc = self.proc, None
        assert proc is not None
        return self._wait(proc, timeout)

    def _wait(self, proc: "subprocess.Popen[str]", timeout: float) -> int:
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise RuntimeError("agentik did not exit:\n" + self.log())
        finally:
            if self._reader is not None:
                self._reader.join()
        return code

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self._wait(self.proc, 30)
            self.proc = None
        self._dir.cleanup()

    def log(self) -> str:
        with self._lock:
            return "".join(self._log)
