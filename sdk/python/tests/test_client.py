"""The client against real agentik processes (see harness.py for the
model's script). Run through ``go test ./cmd/agentik -run PythonSDK``."""

import asyncio
import logging
import os
import re
import signal
import subprocess
import sys
import unittest

import agentik
from agentik import AgentikError, ConnectionLost, Disconnected, End, TextChunk, ToolCall, ToolResult

from . import harness

TOKEN = "tok-python-1"
OTHER = "tok-other-1"
AUTH = {"AGENTIK_AUTH_TOKENS": f"py:{TOKEN},other:{OTHER}"}
TIMEOUT = 30  # seconds any one step may take before the test fails


class ServerTest(unittest.IsolatedAsyncioTestCase):
    """Tests sharing one server with two principals and a long idle timeout."""

    server: harness.Server

    @classmethod
    def setUpClass(cls) -> None:
        harness.require_server()
        cls.server = harness.Server(dict(AUTH, AGENTIK_WS_IDLE_TIMEOUT="60s"))
        cls.server.start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.close()

    async def connect(self, **kw) -> agentik.Client:
        kw.setdefault("token", TOKEN)
        client = await asyncio.wait_for(agentik.connect(self.server.url, **kw), TIMEOUT)
        self.addAsyncCleanup(client.close)
        return client


class Streaming(ServerTest):
    async def test_a_streamed_answer_with_its_tokens(self):
        client = await self.connect(title="python")
        self.assertIsInstance(client.status, agentik.Status)
        self.assertTrue(client.conversation_id)
        self.assertIs(client.status.working, False)
        await client.send("hello")
        chunks = []
        async for event in client:
            if isinstance(event, TextChunk):
                chunks.append(event.text)
            elif isinstance(event, End):
                self.assertEqual(event.tokens_used, 10)  # 7 prompt + 3 completion
                self.assertEqual(event.reason, "completed")
                break
            else:
                self.fail(f"unexpected {event!r}")
        self.assertEqual(chunks, ["Hel", "lo, ", "world"])
        self.assertEqual(client.tokens_used, 10)

        answer = await asyncio.wait_for(client.ask("hello"), TIMEOUT)
        self.assertEqual((answer.text, str(answer), answer.tokens_used, answer.reason), ("Hello, world", "Hello, world", 10, "completed"))
        self.assertEqual(answer.events, [])
        self.assertEqual(client.tokens_used, 20)

    async def test_tool_events_when_asked_for(self):
        client = await self.connect(events=["tools"])
        self.assertEqual(client.status.events, ["tools"])
        answer = await asyncio.wait_for(client.ask("time?"), TIMEOUT)
        self.assertEqual(answer.text, "It is tea time.")
        self.assertEqual([type(e) for e in answer.events], [ToolCall, ToolResult])
        call, result = answer.events
        self.assertEqual((call.name, result.name, result.call_id, result.is_error), ("current_time", "current_time", call.call_id, False))
        self.assertRegex(result.text, r"^\d{4}-\d\d-\d\dT")

    async def test_without_the_extension_tool_events_are_not_sent(self):
        client = await self.connect()
        answer = await asyncio.wait_for(client.ask("time?"), TIMEOUT)
        self.assertEqual((answer.text, answer.events), ("It is tea time.", []))

    async def test_interrupt(self):
        client = await self.connect()
        await client.send("hang")
        first = await asyncio.wait_for(client.receive(), TIMEOUT)
        self.assertEqual(first, TextChunk(text="partial"))
        await client.interrupt()
        end = await asyncio.wait_for(client.receive(), TIMEOUT)
        self.assertIsInstance(end, End)
        self.assertEqual(end.reason, "interrupted")
        # The connection goes on.
        self.assertEqual((await asyncio.wait_for(client.ask("hello"), TIMEOUT)).text, "Hello, world")

    async def test_two_clients_of_one_conversation_see_the_same_answer(self):
        first = await self.connect()
        second = await self.connect(conversation_id=first.conversation_id)
        self.assertEqual(second.conversation_id, first.conversation_id)
        answer = await asyncio.wait_for(first.ask("hello"), TIMEOUT)
        seen = []
        async for event in second:
            seen.append(event)
            if isinstance(event, End):
                break
        self.assertEqual("".join(e.text for e in seen if isinstance(e, TextChunk)), answer.text)


class Errors(ServerTest):
    async def test_a_failed_turn_raises_and_the_connection_goes_on(self):
        client = await self.connect()
        with self.assertRaises(AgentikError) as cm:
            await asyncio.wait_for(client.ask("fail"), TIMEOUT)
        self.assertEqual(cm.exception.code, "llm_error")
        self.assertTrue(cm.exception.details)
        self.assertTrue(cm.exception.reply_to)  # the id of the failed user message
        # ask consumed the turn's END: the next answer is the next turn's.
        self.assertEqual((await asyncio.wait_for(client.ask("hello"), TIMEOUT)).text, "Hello, world")

    async def test_iteration_raises_error_then_goes_on(self):
        client = await self.connect()
        await client.send("fail")
        with self.assertRaises(AgentikError) as cm:
            async for event in client:
                self.fail(f"unexpected {event!r}")
        self.assertEqual(cm.exception.code, "llm_error")
        async for event in client:  # iterating again continues the stream
            self.assertEqual((type(event), event.reason), (End, "error"))
            break

    async def test_a_refused_message_raises_at_once(self):
        client = await self.connect()
        with self.assertRaises(AgentikError) as cm:
            await asyncio.wait_for(client.ask(""), TIMEOUT)
        self.assertEqual(cm.exception.code, "invalid")
        self.assertIsNone(cm.exception.reply_to)
        self.assertEqual((await asyncio.wait_for(client.ask("hello"), TIMEOUT)).text, "Hello, world")

    async def test_busy_reject(self):
        client = await self.connect()
        await client.send("hang")
        self.assertEqual(await asyncio.wait_for(client.receive(), TIMEOUT), TextChunk(text="partial"))
        with self.assertRaises(AgentikError) as cm:
            await asyncio.wait_for(client.ask("hello", if_busy="reject"), TIMEOUT)
        self.assertEqual(cm.exception.code, "busy")
        await client.interrupt()
        self.assertEqual((await asyncio.wait_for(client.receive(), TIMEOUT)).reason, "interrupted")

    async def test_unknown_conversation_and_unknown_agent(self):
        with self.assertRaises(AgentikError) as cm:
            await self.connect(conversation_id="no-such-conversation")
        self.assertEqual(cm.exception.code, "not_found")
        # /agents/{id}/ws: this server has no such agent.
        with self.assertRaises(AgentikError) as cm:
            await self.connect(agent="support")
        self.assertEqual(cm.exception.code, "not_found")


class Auth(ServerTest):
    async def test_missing_and_bad_tokens_are_refused(self):
        for token in (None, "", "tok-wrong"):
            with self.subTest(token=token), self.assertRaises(AgentikError) as cm:
                await self.connect(token=token)
            self.assertEqual(cm.exception.code, "unauthorized")
        with self.assertRaises(AgentikError) as cm:
            await agentik.Rest(self.server.url, token="tok-wrong").list_conversations()
        self.assertEqual(cm.exception.code, "unauthorized")

    async def test_another_principals_conversation_is_not_found(self):
        mine = await self.connect()
        with self.assertRaises(AgentikError) as cm:
            await self.connect(token=OTHER, conversation_id=mine.conversation_id)
        self.assertEqual(cm.exception.code, "not_found")

    async def test_reconnect_does_not_retry_a_refusal(self):
        client = agentik.Client(self.server.url, token="tok-wrong")
        with self.assertNoLogs("agentik", logging.INFO), self.assertRaises(AgentikError) as cm:
            await asyncio.wait_for(client.reconnect(), TIMEOUT)
        self.assertEqual(cm.exception.code, "unauthorized")


class RestHelper(ServerTest):
    async def test_create_attach_list_read_delete(self):
        rest = agentik.Rest(self.server.url, token=TOKEN)
        conv = await rest.create_conversation(title="from python")
        self.assertEqual((conv.title, conv.temporal, conv.working), ("from python", False, False))
        client = await self.connect(conversation_id=conv.id)
        self.assertEqual(client.conversation_id, conv.id)
        self.assertEqual((await asyncio.wait_for(client.ask("hello"), TIMEOUT)).text, "Hello, world")
        await client.close()

        page = await rest.list_conversations(limit=100)
        self.assertIn(conv.id, [c.id for c in page.conversations])
        got = await rest.get_conversation(conv.id)
        self.assertGreaterEqual(got.updated_at, conv.updated_at)
        self.assertEqual((got.tokens.input, got.tokens.output), (7, 3))
        journal = await rest.messages(conv.id)
        self.assertEqual([m["type"] for m in journal], ["user_message", "assistant_message"])
        self.assertEqual(journal[1]["content"][0]["text"], "Hello, world")

        # The other principal sees none of it.
        other = agentik.Rest(self.server.url, token=OTHER)
        self.assertNotIn(conv.id, [c.id for c in (await other.list_conversations()).conversations])
        with self.assertRaises(AgentikError) as cm:
            await other.get_conversation(conv.id)
        self.assertEqual(cm.exception.code, "not_found")

        await rest.delete_conversation(conv.id)
        with self.assertRaises(AgentikError) as cm:
            await rest.get_conversation(conv.id)
        self.assertEqual(cm.exception.code, "not_found")
        with self.assertRaises(AgentikError) as cm:
            await self.connect(conversation_id=conv.id)
        self.assertEqual(cm.exception.code, "not_found")

    async def test_paging(self):
        rest = agentik.Rest(self.server.url, token=OTHER)
        made = [(await rest.create_conversation(title=f"page {i}")).id for i in range(3)]
        first = await rest.list_conversations(limit=2)
        self.assertEqual(len(first.conversations), 2)
        self.assertIsNotNone(first.next)
        rest_of = await rest.list_conversations(limit=100, before=first.next)
        ids = [c.id for c in first.conversations + rest_of.conversations]
        self.assertEqual(len(ids), len(set(ids)))
        self.assertTrue(set(made) <= set(ids))

    async def test_unknown_agent(self):
        with self.assertRaises(AgentikError) as cm:
            await agentik.Rest(self.server.url, token=TOKEN, agent="support").list_conversations()
        self.assertEqual(cm.exception.code, "not_found")


class Branching(ServerTest):
    """Edit, regenerate, switch and fork over REST (docs/branching.md). The
    model answers "pick a number" with the next number each time it is
    asked; answers are read from a WebSocket client of the conversation,
    which follows its head."""

    async def answer(self, client: agentik.Client) -> str:
        parts = []
        async for event in client:
            if isinstance(event, TextChunk):
                parts.append(event.text)
            if isinstance(event, End):
                return "".join(parts)
        self.fail("the connection ended before END")

    @staticmethod
    def summary(messages):
        return [(m["type"], "".join(p.get("text", "") for p in m.get("content", []))) for m in messages]

    async def test_regenerate_switch_edit_fork(self):
        rest = agentik.Rest(self.server.url, token=TOKEN)
        client = await self.connect()
        cid = client.conversation_id
        first = (await asyncio.wait_for(client.ask("pick a number"), TIMEOUT)).text
        self.assertRegex(first, r"^Number \d+\.$")
        u, a1 = await rest.messages(cid)
        self.assertEqual(a1["parent"], u["seq"])
        self.assertNotIn("parent", u)

        sent = await rest.regenerate(cid, seq=u["seq"])
        self.assertEqual((sent.message_id, sent.seq), (u["id"], u["seq"]))
        second = await asyncio.wait_for(self.answer(client), TIMEOUT)
        self.assertRegex(second, r"^Number \d+\.$")
        self.assertNotEqual(second, first)
        head = await rest.messages(cid)
        self.assertEqual(self.summary(head), [("user_message", "pick a number"), ("assistant_message", second)])
        a2 = head[1]
        self.assertEqual(a2["siblings"], [a1["seq"], a2["seq"]])
        every = await rest.messages(cid, branch="all")
        self.assertEqual([m["seq"] for m in every], [u["seq"], a1["seq"], a2["seq"]])

        conv = await rest.set_head(cid, a1["seq"])
        self.assertEqual(conv.head, a1["seq"])
        self.assertEqual(self.summary(await rest.messages(cid)), [("user_message", "pick a number"), ("assistant_message", first)])

        edit = await rest.send(cid, "an edited question", parent=0)
        self.assertEqual(await asyncio.wait_for(self.answer(client), TIMEOUT), "echo: an edited question")
        head = await rest.messages(cid)
        self.assertEqual(self.summary(head), [("user_message", "an edited question"), ("assistant_message", "echo: an edited question")])
        self.assertEqual(head[0]["seq"], edit.seq)
        self.assertEqual(head[0]["siblings"], [u["seq"], edit.seq])
        self.assertEqual((await rest.get_conversation(cid)).head, head[1]["seq"])

        forked = await rest.fork(cid, seq=a1["seq"])
        self.assertNotEqual(forked.id, cid)
        assert forked.forked_from is not None
        self.assertEqual((forked.forked_from.conversation_id, forked.forked_from.seq), (cid, a1["seq"]))
        self.assertEqual(self.summary(await rest.messages(forked.id)), [("user_message", "pick a number"), ("assistant_message", first)])

    async def test_refusals_change_nothing(self):
        rest = agentik.Rest(self.server.url, token=TOKEN)
        client = await self.connect()
        cid = client.conversation_id
        await asyncio.wait_for(client.ask("pick a number"), TIMEOUT)
        before = await rest.messages(cid, branch="all")
        _, answer = before
        for call, code in [
            (rest.regenerate(cid, seq=answer["seq"]), "invalid"),
            (rest.regenerate(cid, seq=999), "not_found"),
            (rest.set_head(cid, 999), "not_found"),
            (rest.send(cid, "x", parent=999), "not_found"),
            (rest.fork(cid, seq=999), "not_found"),
            (agentik.Rest(self.server.url, token=OTHER).fork(cid), "not_found"),
        ]:
            with self.assertRaises(AgentikError) as cm:
                await call
            self.assertEqual(cm.exception.code, code)
        self.assertEqual(await rest.messages(cid, branch="all"), before)


class Idle(unittest.IsolatedAsyncioTestCase):
    @classmethod
    def setUpClass(cls) -> None:
        harness.require_server()
        cls.server = harness.Server({"AGENTIK_WS_IDLE_TIMEOUT": "300ms"})
        cls.server.start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.close()

    async def test_idle_graceful_disconnect_is_a_clean_end(self):
        client = await asyncio.wait_for(agentik.connect(self.server.url), TIMEOUT)
        self.addAsyncCleanup(client.close)
        cid = client.conversation_id
        received = []
        async for event in client:  # ends, without an exception, on GRACEFUL_DISCONNECT
            received.append(event)
        self.assertEqual(received, [])
        self.assertEqual(client.disconnect_reason, "idle")
        self.assertFalse(client.open)
        async for event in client:  # and stays ended
            self.fail(f"unexpected {event!r}")
        with self.assertRaises(Disconnected) as cm:
            await client.send("hello")
        self.assertEqual((cm.exception.code, cm.exception.reason), ("disconnected", "idle"))
        with self.assertRaises(Disconnected):
            await client.receive()

        # Reconnecting continues the same conversation.
        status = await asyncio.wait_for(client.reconnect(), TIMEOUT)
        self.assertEqual(status.conversation_id, cid)
        self.assertIsNone(client.disconnect_reason)
        self.assertEqual((await asyncio.wait_for(client.ask("hello"), TIMEOUT)).text, "Hello, world")

    async def test_receive_shows_the_graceful_disconnect_message(self):
        client = await asyncio.wait_for(agentik.connect(self.server.url), TIMEOUT)
        self.addAsyncCleanup(client.close)
        m = await asyncio.wait_for(client.receive(), TIMEOUT)
        self.assertEqual(m, agentik.GracefulDisconnect(reason="idle"))
        with self.assertRaises(Disconnected):
            await asyncio.wait_for(client.receive(), TIMEOUT)


class _RetryLogged(logging.Handler):
    """Sets an asyncio.Event when reconnect logs a failed attempt."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.failed = asyncio.Event()
        self.messages = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
        if "reconnect attempt" in record.getMessage():
            self.failed.set()


class Restart(unittest.IsolatedAsyncioTestCase):
    """A server restarted on the same port and database: the client
    reconnects with backoff and continues the same conversation."""

    def setUp(self) -> None:
        harness.require_server()
        self.server = harness.Server(dict(AUTH))
        self.server.start()
        self.addCleanup(self.server.close)

    async def _watch_retries(self) -> _RetryLogged:
        handler = _RetryLogged()
        logger = logging.getLogger("agentik")
        logger.addHandler(handler)
        old = logger.level
        logger.setLevel(logging.INFO)
        self.addCleanup(logger.setLevel, old)
        self.addCleanup(logger.removeHandler, handler)
        return handler

    async def _reconnect_while_restarting(self, client: agentik.Client) -> agentik.Status:
        retries = await self._watch_retries()
        task = asyncio.ensure_future(client.reconnect(timeout=TIMEOUT))
        # The server is down: reconnect fails and retries ...
        await asyncio.wait_for(retries.failed.wait(), TIMEOUT)
        self.assertFalse(task.done())
        # ... until it is back on the same port.
        await asyncio.to_thread(self.server.start)
        return await asyncio.wait_for(task, TIMEOUT)

    async def test_reconnect_after_a_graceful_restart(self):
        client = await asyncio.wait_for(agentik.connect(self.server.url, token=TOKEN), TIMEOUT)
        self.addAsyncCleanup(client.close)
        cid = client.conversation_id
        first = await asyncio.wait_for(client.ask("remember the apple"), TIMEOUT)
        self.assertEqual(first.text, "echo: remember the apple")

        self.server.signal(signal.SIGTERM)
        async for event in client:  # GRACEFUL_DISCONNECT{shutdown}: a clean end
            self.fail(f"unexpected {event!r}")
        self.assertEqual(client.disconnect_reason, "shutdown")
        self.assertEqual(await asyncio.to_thread(self.server.wait), 0)

        status = await self._reconnect_while_restarting(client)
        self.assertEqual(status.conversation_id, cid)
        self.assertEqual(client.conversation_id, cid)
        # The model is given the conversation from before the restart.
        answer = await asyncio.wait_for(client.ask("history"), TIMEOUT)
        self.assertEqual(answer.text, "you said: remember the apple | history")
        self.assertEqual(client.tokens_used, first.tokens_used + answer.tokens_used)  # counted across connections

    async def test_reconnect_after_the_server_was_killed(self):
        client = await asyncio.wait_for(agentik.connect(self.server.url, token=TOKEN), TIMEOUT)
        self.addAsyncCleanup(client.close)
        cid = client.conversation_id
        await asyncio.wait_for(client.ask("first"), TIMEOUT)

        self.server.stop(signal.SIGKILL)
        with self.assertRaises(ConnectionLost) as cm:
            async for event in client:
                self.fail(f"unexpected {event!r}")
        self.assertEqual(cm.exception.code, "unavailable")
        with self.assertRaises(ConnectionLost):
            await client.send("into the void")

        status = await self._reconnect_while_restarting(client)
        self.assertEqual(status.conversation_id, cid)
        answer = await asyncio.wait_for(client.ask("history"), TIMEOUT)
        self.assertEqual(answer.text, "you said: first | history")

    async def test_reconnect_gives_up_after_its_timeout(self):
        client = await asyncio.wait_for(agentik.connect(self.server.url, token=TOKEN), TIMEOUT)
        self.server.stop(signal.SIGKILL)
        with self.assertRaises(AgentikError) as cm:
            await asyncio.wait_for(client.reconnect(timeout=0.5, initial_delay=0.05), TIMEOUT)
        self.assertEqual(cm.exception.code, "unavailable")
        self.assertIn("gave up", cm.exception.details)


class ReadmeExample(unittest.TestCase):
    """The README's example, pasted into an interactive python, against the
    demo backend (only its URL is changed, to this test's server)."""

    def test_readme_example(self):
        harness.require_server()
        server = harness.Server(model="demo")
        server.start()
        self.addCleanup(server.close)
        readme = os.path.join(os.path.dirname(__file__), "..", "README.md")
        with open(readme, encoding="utf-8") as f:
            code = re.search(r"```python\n(.*?)```", f.read(), re.S).group(1)
        self.assertEqual(code.count("http://localhost:8080"), 1)
        self.assertLessEqual(len(code.strip().splitlines()), 12)
        code = code.replace("http://localhost:8080", server.url)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(os.path.dirname(__file__), "..")] + sys.path))
        out = subprocess.run([sys.executable, "-i"], input=code, capture_output=True, text=True, timeout=TIMEOUT, env=env)
        self.assertNotIn("Error", out.stderr, out.stderr)
        self.assertIn("I am the agentik demo model", out.stdout)
        self.assertRegex(out.stdout, r"The current_time tool says it is \d{4}-")
        self.assertRegex(out.stdout, r"\(\d+ tokens\)")


if __name__ == "__main__":
    unittest.main()


class Approvals(ServerTest):
    """The tool approval extension, on a server whose agent asks before
    current_time runs ("time?" calls it)."""

    @classmethod
    def setUpClass(cls) -> None:
        harness.require_server()
        cls.server = harness.Server(dict(AUTH, AGENTIK_WS_IDLE_TIMEOUT="60s", AGENTIK_TOOL_APPROVAL="current_time=ask"))
        cls.server.start()

    async def until(self, client: agentik.Client, cls: type) -> list:
        """The messages up to and including the first of class cls."""
        out = []
        while True:
            m = await asyncio.wait_for(client.receive(), TIMEOUT)
            out.append(m)
            if isinstance(m, cls):
                return out

    async def test_ask_answers_through_on_approval(self):
        client = await self.connect(events=["tools"])
        seen = []
        answer = await asyncio.wait_for(client.ask("time?", on_approval=lambda r: seen.append(r) or True), TIMEOUT)
        self.assertEqual(answer.text, "It is tea time.")
        self.assertEqual([type(e) for e in answer.events], [ToolCall, agentik.ApprovalRequest, ToolResult])
        call, req, result = answer.events
        self.assertEqual(seen, [req])
        self.assertEqual((req.call_id, req.name, req.arguments, req.expires_at), (call.call_id, "current_time", {}, None))
        self.assertFalse(result.is_error)

        # A coroutine answering with edited arguments: the tool runs with them.
        async def edit(r: agentik.ApprovalRequest) -> agentik.Approval:
            return agentik.Approval(call_id=r.call_id, approved=True, arguments={"timezone": "Asia/Tokyo"})

        answer = await asyncio.wait_for(client.ask("time?", on_approval=edit), TIMEOUT)
        self.assertEqual(answer.text, "It is tea time.")
        self.assertTrue(answer.events[-1].text.endswith("+09:00"), answer.events[-1])

        # Without the tools extension the request still comes, alone.
        plain = await self.connect()
        answer = await asyncio.wait_for(plain.ask("time?", on_approval=lambda r: False), TIMEOUT)
        self.assertEqual([type(e) for e in answer.events], [agentik.ApprovalRequest])

    async def test_deny_with_a_reason_and_refusals(self):
        client = await self.connect()
        await client.send("time?")
        req = (await self.until(client, agentik.ApprovalRequest))[-1]
        # Refused answers are ERRORs that change nothing; the connection goes on.
        await client.approve(req.call_id, arguments={"timezone": 5})
        self.assertEqual((await self.until(client, agentik.Error))[-1].code, "invalid")
        await client.deny("no-such-call")
        self.assertEqual((await self.until(client, agentik.Error))[-1].code, "not_found")
        await client.deny(req.call_id, "not now")
        await client.deny(req.call_id, "twice")
        got = await self.until(client, End)
        self.assertEqual(got[-1].reason, "completed")
        self.assertEqual("".join(m.text for m in got if isinstance(m, TextChunk)), "It is tea time.")
        errors = [m for m in got if isinstance(m, agentik.Error)]
        if not errors:  # the refusal of the second answer may come after the END
            errors = [(await self.until(client, agentik.Error))[-1]]
        self.assertEqual([e.code for e in errors], ["conflict"])
        journal = await agentik.Rest(self.server.url, token=TOKEN).messages(client.conversation_id)
        results = [m for m in journal if m["type"] == "tool_result"]
        self.assertEqual(len(results), 1)
        self.assertTrue(results[0]["is_error"])
        self.assertEqual(results[0]["content"], [{"type": "text", "text": "denied by the user: not now"}])

    async def test_attach_while_pending_and_rest(self):
        first = await self.connect()
        await first.send("time?")
        req = (await self.until(first, agentik.ApprovalRequest))[-1]
        # A connection that attaches is told what waits, right after STATUS.
        second = await self.connect(conversation_id=first.conversation_id)
        self.assertIs(second.status.working, True)
        self.assertEqual(await asyncio.wait_for(second.receive(), TIMEOUT), req)

        rest = agentik.Rest(self.server.url, token=TOKEN)
        pending = await rest.approvals(first.conversation_id)
        self.assertEqual([(p["call_id"], p["name"]) for p in pending], [(req.call_id, "current_time")])
        with self.assertRaises(AgentikError) as cm:  # not the other principal's to answer
            await agentik.Rest(self.server.url, token=OTHER).approve(first.conversation_id, req.call_id)
        self.assertEqual(cm.exception.code, "not_found")
        with self.assertRaises(AgentikError) as cm:
            await rest.approve(first.conversation_id, req.call_id, arguments={"timezone": 5})
        self.assertEqual(cm.exception.code, "invalid")
        await rest.approve(first.conversation_id, req.call_id)
        for client in (first, second):
            got = await self.until(client, End)
            self.assertEqual("".join(m.text for m in got if isinstance(m, TextChunk)), "It is tea time.")
        self.assertEqual(await rest.approvals(first.conversation_id), [])
        with self.assertRaises(AgentikError) as cm:
            await rest.deny(first.conversation_id, req.call_id, "late")
        self.assertEqual(cm.exception.code, "conflict")
