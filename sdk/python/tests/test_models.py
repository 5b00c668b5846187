"""The message models: every shape of the seed document (and this server's
additions) parses into its own class and goes back out exactly."""

import json
import os
import random
import unittest

import agentik
from agentik import IncomingMessage, OutgoingMessage, models

with open(os.path.join(os.path.dirname(__file__), "seed_messages.json"), encoding="utf-8") as f:
    SHAPES = json.load(f)


def _all_shapes():
    for group in ("seed", "server_additions"):
        for entry in SHAPES[group]:
            yield group, entry


class SeedShapes(unittest.TestCase):
    def test_the_seed_document_is_all_here(self):
        # The seed shows one example of each of its six messages.
        seen = {(e["json"]["type"], e["json"].get("subtype")) for e in SHAPES["seed"]}
        self.assertEqual(seen, {
            ("USER_MESSAGE", None), ("STATUS", None), ("AGENT_EVENT", "TEXT_CHUNK"),
            ("AGENT_EVENT", "END"), ("ERROR", None), ("GRACEFUL_DISCONNECT", None),
        })

    def test_every_shape_round_trips_exactly(self):
        for group, entry in _all_shapes():
            with self.subTest(group=group, shape=entry["json"]):
                parser = OutgoingMessage if entry["direction"] == "server" else IncomingMessage
                text = json.dumps(entry["json"], ensure_ascii=False)
                for data in (text, text.encode("utf-8")):
                    m = parser.model_validate_json(data)
                    self.assertIs(type(m), getattr(agentik, entry["class"]))
                    # Out again: the same JSON object, no field added or lost.
                    self.assertEqual(json.loads(m.to_json()), entry["json"])
                    self.assertEqual(m.to_dict(), entry["json"])
                    # And in again: an equal model.
                    self.assertEqual(parser.model_validate_json(m.to_json()), m)
                self.assertEqual(parser.model_validate(entry["json"]), m)
                if entry["direction"] == "server":
                    self.assertEqual(models.parse_server_message(text), m)

    def test_to_json_keeps_non_ascii_text(self):
        m = OutgoingMessage.model_validate_json('{"type":"AGENT_EVENT","subtype":"TEXT_CHUNK","text":"Фрагмент текста"}')
        self.assertIn("Фрагмент текста", m.to_json())

    def test_models_built_in_python_have_their_discriminators(self):
        self.assertEqual(agentik.UserMessage(text="Текст сообщения").to_dict(), {"type": "USER_MESSAGE", "text": "Текст сообщения"})
        self.assertEqual(agentik.TextChunk(text="x").to_dict(), {"type": "AGENT_EVENT", "subtype": "TEXT_CHUNK", "text": "x"})
        self.assertEqual(agentik.End(tokens_used=42).to_dict(), {"type": "AGENT_EVENT", "subtype": "END", "tokens_used": 42})
        self.assertEqual(agentik.Interrupt().to_json(), '{"type":"INTERRUPT"}')
        self.assertEqual(agentik.Status().to_json(), '{"type":"STATUS"}')

    def test_extra_fields_are_ignored(self):
        m = OutgoingMessage.model_validate_json('{"type":"STATUS","conversation_id":"c","future":1}')
        self.assertEqual(m.to_dict(), {"type": "STATUS", "conversation_id": "c"})

    def test_the_directions_do_not_mix(self):
        with self.assertRaises(ValueError):
            OutgoingMessage.model_validate_json('{"type":"USER_MESSAGE","text":"hi"}')
        with self.assertRaises(ValueError):
            IncomingMessage.model_validate_json('{"type":"STATUS"}')

    def test_bad_frames_are_value_errors(self):
        bad = [
            "not json",
            "[]",
            '{"text":"no type"}',
            '{"type":"DANCE"}',
            '{"type":"AGENT_EVENT"}',
            '{"type":"AGENT_EVENT","subtype":"WALTZ"}',
            '{"type":"AGENT_EVENT","subtype":"TEXT_CHUNK"}',
            '{"type":"ERROR","details":"no code"}',
            '{"type":"AGENT_EVENT","subtype":"END","tokens_used":"many"}',
            '{"type":"AGENT_EVENT","subtype":"TOOL_CALL","name":"no call_id"}',
            '{"type":"AGENT_EVENT","subtype":"APPROVAL_REQUEST","call_id":"no name"}',
        ]
        for data in bad:
            with self.subTest(data=data), self.assertRaises(ValueError):
                OutgoingMessage.model_validate_json(data)
        for data in ["{}", '{"type":"USER_MESSAGE"}', '{"type":"USER_MESSAGE","text":"x","if_busy":"panic"}', '{"type":"STOP"}',
                     '{"type":"APPROVAL","call_id":"c"}', '{"type":"APPROVAL","approved":true}',
                     '{"type":"APPROVAL","call_id":"c","approved":true,"arguments":[1]}']:
            with self.subTest(data=data), self.assertRaises(ValueError):
                IncomingMessage.model_validate_json(data)

    def test_approval_models_built_in_python(self):
        self.assertEqual(agentik.Approval(call_id="c", approved=False, reason="no").to_json(),
                         '{"type":"APPROVAL","call_id":"c","approved":false,"reason":"no"}')
        req = OutgoingMessage.model_validate_json('{"type":"AGENT_EVENT","subtype":"APPROVAL_REQUEST","call_id":"c","name":"t","arguments":{"a":[1]}}')
        self.assertIsInstance(req, agentik.ApprovalRequest)
        self.assertEqual((req.call_id, req.name, req.arguments, req.expires_at), ("c", "t", {"a": [1]}, None))

    def test_the_parsers_are_not_models(self):
        with self.assertRaises(TypeError):
            OutgoingMessage()
        with self.assertRaises(TypeError):
            IncomingMessage()


class LenientParsing(unittest.TestCase):
    """parse_server_message, which the client uses: a newer server's
    messages become UnknownMessage instead of failing."""

    def test_unknown_types_and_subtypes(self):
        for frame in ['{"type":"APPROVAL","x":1}', '{"type":"AGENT_EVENT","subtype":"INPUT_REQUEST","call_id":"c"}',
                      '{"type":"AGENT_EVENT"}']:
            with self.subTest(frame=frame):
                m = models.parse_server_message(frame)
                self.assertIsInstance(m, agentik.UnknownMessage)
                self.assertEqual(m.to_dict(), json.loads(frame))
                self.assertEqual(m.type, json.loads(frame)["type"])
                self.assertEqual(m.subtype, json.loads(frame).get("subtype"))

    def test_known_types_are_still_validated(self):
        for frame in ['{"type":"ERROR"}', '{"type":"AGENT_EVENT","subtype":"TEXT_CHUNK"}', '{"type":"STATUS","working":"maybe"}']:
            with self.subTest(frame=frame), self.assertRaises(ValueError):
                models.parse_server_message(frame)

    def test_not_a_message(self):
        for frame in ["nope", "3", "[]", '{"type":7}', '{"type":""}', "{}"]:
            with self.subTest(frame=frame), self.assertRaises(ValueError):
                models.parse_server_message(frame)


class HostileFrames(unittest.TestCase):
    """Whatever a peer sends, the parsers return a message or raise
    ValueError, never anything else (the client relies on it)."""

    def test_mutated_frames(self):
        rng = random.Random(22)
        frames = [json.dumps(e["json"], ensure_ascii=False).encode() for _, e in _all_shapes()]
        alphabet = b'{}[]":,0123456789.-+eEtruefalsnl\\ \x00\xff\xc3AGENT_TYPESTATUS'
        for i in range(3000):
            b = bytearray(rng.choice(frames))
            for _ in range(rng.randint(1, 4)):
                op, pos = rng.randrange(3), rng.randrange(len(b) + 1)
                if op == 0 and pos < len(b):
                    del b[pos]
                elif op == 1:
                    b.insert(pos, rng.choice(alphabet))
                else:
                    b = b[:pos]
            data = bytes(b)
            for parse in (models.parse_server_message, OutgoingMessage.model_validate_json, IncomingMessage.model_validate_json):
                try:
                    m = parse(data)
                except ValueError:
                    continue
                self.assertIsInstance(m, agentik.Message, data)
                m.to_json()  # and whatever parsed can be sent out again

    def test_deep_nesting(self):
        for deep in ("[" * 100000 + "]" * 100000, '{"type":"STATUS","events":' + "[" * 100000 + "]" * 100000 + "}"):
            for parse in (models.parse_server_message, OutgoingMessage.model_validate_json, IncomingMessage.model_validate_json):
                with self.subTest(parse=parse), self.assertRaises(ValueError):
                    parse(deep)


class Endpoints(unittest.TestCase):
    def test_ws_url(self):
        cases = [
            (("http://localhost:8080",), {}, "ws://localhost:8080/agentik/ws"),
            (("ws://localhost:8080/",), {}, "ws://localhost:8080/agentik/ws"),
            (("https://example.com",), {"agent": "support"}, "wss://example.com/agents/support/ws"),
            (("https://example.com/chat",), {"agent": "a/b"}, "wss://example.com/chat/agents/a%2Fb/ws"),
            (("http://h:1/agentik/ws",), {"conversation_id": "c1"}, "ws://h:1/agentik/ws?conversation_id=c1"),
            (("http://h:1",), {"conversation_id": "c1", "title": "ignored when attaching"}, "ws://h:1/agentik/ws?conversation_id=c1"),
            (("http://h:1",), {"title": "Hi there", "temporal": True, "events": ["tools", "reasoning"]},
             "ws://h:1/agentik/ws?title=Hi+there&temporal=true&events=tools%2Creasoning"),
        ]
        for args, kw, want in cases:
            with self.subTest(args=args, kw=kw):
                self.assertEqual(agentik.ws_url(*args, **kw), want)

    def test_bad_urls(self):
        for url, kw in [("localhost:8080", {}), ("ftp://h", {}), ("http://", {}), ("http://h/agentik/ws", {"agent": "x"}),
                        ("http://h", {"agent": ""})]:
            with self.subTest(url=url, kw=kw), self.assertRaises(ValueError):
                agentik.ws_url(url, **kw)
        with self.assertRaises(ValueError):
            agentik.Client("localhost:8080")
        with self.assertRaises(ValueError):
            agentik.Rest("localhost:8080")


if __name__ == "__main__":
    unittest.main()
