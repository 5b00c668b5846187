// A chat page on useStream, as agent-chat-ui builds one: send, a streamed
// answer, reload restores the thread (its id is in the URL), edit and
// regenerate through checkpoints, branch arrows, an approval answered in
// the page.
import React, { useState } from "react";
import { createRoot } from "react-dom/client";
import { useStream } from "@langchain/langgraph-sdk/react";

const params = new URLSearchParams(location.search);

function text(m) {
  if (typeof m.content === "string") return m.content;
  return (m.content ?? []).map((b) => b.text ?? "").join("");
}

function Branches({ meta, thread }) {
  const options = meta?.branchOptions;
  if (!options || options.length < 2) return null;
  const i = options.indexOf(meta.branch);
  return (
    <span className="branches">
      <button className="prev" disabled={i <= 0} onClick={() => thread.setBranch(options[i - 1])}>‹</button>
      <span className="branch-index">{i + 1}/{options.length}</span>
      <button className="next" disabled={i >= options.length - 1} onClick={() => thread.setBranch(options[i + 1])}>›</button>
    </span>
  );
}

function App() {
  const [threadId, setThreadId] = useState(params.get("thread"));
  const [draft, setDraft] = useState("");
  const [edit, setEdit] = useState("");
  const thread = useStream({
    apiUrl: location.origin + "/langgraph",
    apiKey: params.get("key"),
    assistantId: "agentik",
    messagesKey: "messages",
    fetchStateHistory: true,
    threadId,
    onThreadId: (id) => {
      setThreadId(id);
      history.replaceState(null, "", "?key=" + params.get("key") + "&thread=" + id);
    },
  });
  const interrupt = thread.interrupt;
  return (
    <main>
      <ul id="messages">
        {thread.messages.map((m, i) => {
          const meta = thread.getMessagesMetadata(m, i);
          const parent = meta?.firstSeenState?.parent_checkpoint;
          return (
            <li key={m.id ?? i} className={"msg " + m.type} data-type={m.type}>
              <span className="text">{text(m)}</span>
              {m.type === "human" && (
                <button className="edit" onClick={() => thread.submit({ messages: [{ type: "human", content: edit }] }, { checkpoint: parent })}>edit</button>
              )}
              {m.type === "ai" && (
                <button className="regenerate" onClick={() => thread.submit(undefined, { checkpoint: parent })}>regenerate</button>
              )}
              <Branches meta={meta} thread={thread} />
            </li>
          );
        })}
      </ul>
      {interrupt && (
        <div id="interrupt">
          <span className="action">{interrupt.value?.action_requests?.[0]?.name}</span>
          <button id="approve" onClick={() => thread.submit(undefined, { command: { resume: { decisions: [{ type: "approve" }] } } })}>approve</button>
        </div>
      )}
      <input id="edit-text" value={edit} onChange={(e) => setEdit(e.target.value)} />
      <input id="text" value={draft} onChange={(e) => setDraft(e.target.value)} />
      <button id="send" onClick={() => { thread.submit({ messages: [{ type: "human", content: draft }] }); setDraft(""); }}>send</button>
      <div id="status">{thread.isLoading ? "loading" : "idle"}</div>
      <div id="error">{thread.error ? String(thread.error) : ""}</div>
    </main>
  );
}

createRoot(document.getElementById("root")).render(<App />);
