// mcpstation web console: plain DOM, no build step. Every value from the station is written
// with textContent (never innerHTML), so a server's tool description cannot inject markup.
"use strict";

(() => {
  const TOKEN_KEY = "mcpstation.token";
  const STATION_TOKEN_PREFIX = "mcps_"; // the station's own tokens; any other is an identity provider's
  const $ = (id) => document.getElementById(id);
  const state = { servers: [], conflicts: [], tools: [], events: null, ready: false };

  // -- DOM helpers ------------------------------------------------------------------------------

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") el.className = value;
      else if (key === "text") el.textContent = value;
      else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  const stateClass = (s) => "state state-" + String(s || "").toLowerCase();
  const fmtTime = (iso) => new Date(iso).toLocaleString();

  // -- API --------------------------------------------------------------------------------------

  const token = () => sessionStorage.getItem(TOKEN_KEY);

  class ApiFailure extends Error {
    constructor(status, body) {
      super((body && body.message) || "HTTP " + status);
      this.status = status;
      this.body = body;
    }
  }

  async function api(method, path, body) {
    const headers = { Accept: "application/json" };
    const t = token();
    if (t) headers.Authorization = "Bearer " + t;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "omit",
      cache: "no-store",
    });
    let data = null;
    try {
      data = await response.json();
    } catch {
      data = null;
    }
    if (response.status === 401) {
      showLogin(t ? "That token was not accepted (unknown or revoked)." : "");
      throw new ApiFailure(401, data);
    }
    if (!response.ok && !(data && "ok" in data)) throw new ApiFailure(response.status, data);
    return data;
  }

  // -- sign-in and the event stream ------------------------------------------------------------------

  function showLogin(message) {
    closeEvents();
    state.ready = false;
    lastView = null; // the next sign-in's first view is a new visit
    for (const view of document.querySelectorAll(".view")) view.hidden = true;
    $("login").hidden = false;
    $("forget").hidden = !token();
    const error = $("login-error");
    error.hidden = !message;
    error.textContent = message || "";
    setLive("off", "Not signed in");
    $("token").focus();
  }

  $("login-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const value = $("token").value.trim();
    if (!value) return;
    sessionStorage.setItem(TOKEN_KEY, value);
    $("token").value = "";
    await start();
  });

  $("forget").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin("");
  });

  function setLive(kind, text) {
    $("live-dot").className = "dot dot-" + kind;
    $("live-text").textContent = text;
  }

  function closeEvents() {
    if (state.events) state.events.close();
    state.events = null;
  }

  function openEvents() {
    closeEvents();
    const t = token();
    if (t && !t.startsWith(STATION_TOKEN_PREFIX)) {
      // The API refuses an identity provider's token in a URL (where it could be logged): no stream.
      setLive("off", "No live updates with this token");
      return;
    }
    // EventSource cannot send headers: the API accepts ?token= on this one route only.
    const url = "/api/events" + (t ? "?token=" + encodeURIComponent(t) : "");
    const events = new EventSource(url);
    state.events = events;
    events.addEventListener("open", () => setLive("on", "Live"));
    events.addEventListener("error", () => setLive("wait", "Reconnecting…"));
    events.addEventListener("snapshot", (e) => {
      const data = JSON.parse(e.data);
      state.servers = data.servers;
      state.conflicts = data.conflicts || [];
      renderServers();
    });
    events.addEventListener("state", (e) => {
      const data = JSON.parse(e.data);
      const server = state.servers.find((s) => s.name === data.server);
      if (server) {
        server.state = data.state;
        server.error = data.error;
        server.tools = data.tools;
        renderServers();
      } else {
        refreshServers();
      }
    });
    events.addEventListener("server", () => refreshServers());
    events.addEventListener("catalog", () => {
      if (currentRoute().view === "tools") loadTools();
    });
  }

  async function start() {
    try {
      const health = await api("GET", "/api/mcp/servers");
      state.servers = health.servers;
      state.conflicts = health.conflicts;
    } catch (error) {
      if (!(error instanceof ApiFailure && error.status === 401)) {
        showLogin("The station did not answer: " + error.message);
      }
      return;
    }
    state.ready = true;
    $("login").hidden = true;
    $("forget").hidden = !token();
    openEvents();
    route();
  }

  // -- routing: #/servers, #/tools, #/tools/NAME, #/audit, #/connections -------------------------------

  function currentRoute() {
    const parts = location.hash.replace(/^#\/?/, "").split("/");
    const view = ["servers", "tools", "audit", "connections"].includes(parts[0]) ? parts[0] : "servers";
    return { view, arg: parts[1] ? decodeURIComponent(parts.slice(1).join("/")) : null };
  }

  let lastView = null;

  function route() {
    if (!state.ready) return;
    const { view, arg } = currentRoute();
    for (const section of document.querySelectorAll(".view")) section.hidden = section.id !== "view-" + view;
    for (const link of document.querySelectorAll("[data-nav]")) {
      if (link.dataset.nav === view) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    document.title = view.charAt(0).toUpperCase() + view.slice(1) + (arg ? " · " + arg : "") + " · mcpstation";
    if (view === "servers") renderServers();
    if (view === "tools") loadTools(arg);
    if (view === "audit") loadAudit();
    if (view === "connections") {
      if (lastView !== view) say("connections-message", "", true); // what it said was about another visit
      loadConnections();
    }
    if (lastView !== view) $(view + "-title").focus();
    lastView = view;
  }

  window.addEventListener("hashchange", route);

  // -- servers ----------------------------------------------------------------------------------

  async function refreshServers() {
    try {
      const data = await api("GET", "/api/mcp/servers");
      state.servers = data.servers;
      state.conflicts = data.conflicts;
      renderServers();
    } catch {
      /* the event stream will bring the next change */
    }
  }

  function say(id, text, ok) {
    const el = $(id);
    el.textContent = text;
    el.className = "message " + (ok ? "ok" : "bad");
  }

  async function serverAction(name, verb, method) {
    say("server-message", verb.charAt(0).toUpperCase() + verb.slice(1) + " " + name + "…", true);
    const path = "/api/mcp/servers/" + encodeURIComponent(name) + (verb === "remove" ? "" : "/" + verb);
    try {
      const change = await api(method || "POST", path);
      say("server-message", change.message, change.ok);
    } catch (error) {
      say("server-message", error.message, false);
    }
    refreshServers();
  }

  function actionButton(label, name, verb, extra) {
    return h("button", {
      type: "button",
      class: "small" + (extra ? " " + extra : ""),
      "aria-label": label + " " + name,
      onclick: () => {
        if (verb === "remove" && !confirm("Remove the server " + name + "?")) return;
        serverAction(name, verb, verb === "remove" ? "DELETE" : "POST");
      },
      text: label,
    });
  }

  function renderServers() {
    const body = $("servers-body");
    body.replaceChildren();
    const counts = {};
    for (const s of state.servers) counts[s.state] = (counts[s.state] || 0) + 1;
    $("servers-summary").textContent = state.servers.length
      ? Object.entries(counts).map(([k, n]) => n + " " + k.toLowerCase()).join(", ")
      : "No servers yet. Add one below.";
    const pending = state.servers.filter((s) => s.state === "PENDING");
    $("pending").hidden = pending.length === 0;
    $("pending-list").replaceChildren(
      ...pending.map((s) =>
        h("li", { class: "card pending" },
          h("div", {}, h("strong", { text: s.name }), " ", h("code", { text: s.target })),
          s.error ? h("p", { class: "muted", text: s.error }) : null,
          actionButton("Approve", s.name, "approve", "primary"),
          actionButton("Remove", s.name, "remove", "danger"))),
    );
    for (const s of state.servers) {
      const dynamic = s.origin === "dynamic";
      const actions = h("div", { class: "actions" });
      if (dynamic && s.state === "DISABLED") actions.append(actionButton("Enable", s.name, "enable"));
      if (dynamic && s.state !== "DISABLED" && s.state !== "PENDING") actions.append(actionButton("Disable", s.name, "disable"));
      if (!["DISABLED", "PENDING", "SHADOWED", "REFUSED"].includes(s.state)) actions.append(actionButton("Reconnect", s.name, "reconnect"));
      if (dynamic) actions.append(actionButton("Remove", s.name, "remove", "danger"));
      body.append(
        h("tr", { "data-server": s.name },
          h("th", { scope: "row", "data-label": "Name" }, h("div", {}, s.name, h("span", { class: "origin", text: s.origin }))),
          h("td", { "data-label": "State" }, h("div", {},
            h("span", { class: stateClass(s.state), text: s.state }),
            s.error ? h("span", { class: "server-error", text: s.error }) : null)),
          h("td", { "data-label": "Tools", class: "num", text: String(s.tools) }),
          h("td", { "data-label": "Target" }, h("code", { class: "target", text: s.target })),
          h("td", { "data-label": "Version", text: [s.server_name, s.server_version].filter(Boolean).join(" ") || "—" }),
          h("td", { "data-label": "Actions" }, actions)),
      );
    }
    $("server-names").replaceChildren(...state.servers.map((s) => h("option", { value: s.name })));
  }

  const transportSelect = $("add-transport");
  function syncTransport() {
    const stdio = transportSelect.value === "stdio";
    for (const el of document.querySelectorAll("[data-for=stdio]")) el.hidden = !stdio;
    for (const el of document.querySelectorAll("[data-for=remote]")) el.hidden = stdio;
    $("add-command").required = stdio;
    $("add-url").required = !stdio;
    $("add-secrets-label").firstChild.textContent = stdio ? "Environment, " : "Headers, ";
  }
  transportSelect.addEventListener("change", syncTransport);
  syncTransport();

  function pairs(text, sep) {
    const out = {};
    for (const line of text.split("\n")) {
      const trimmed = line.trim();
      if (!trimmed) continue;
      const at = trimmed.indexOf(sep);
      if (at < 1) throw new Error("Expected KEY" + sep + "value, got: " + trimmed.slice(0, 40));
      out[trimmed.slice(0, at).trim()] = trimmed.slice(at + 1).trim();
    }
    return out;
  }

  $("add-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const form = event.target;
    const transport = transportSelect.value;
    const spec = { name: form.name.value.trim(), transport };
    try {
      if (transport === "stdio") {
        spec.command = form.command.value.trim();
        spec.args = form.args.value.split("\n").map((a) => a.trim()).filter(Boolean);
        const env = pairs(form.secrets.value, "=");
        if (Object.keys(env).length) spec.env = env;
      } else {
        spec.url = form.url.value.trim();
        const headers = pairs(form.secrets.value, "=");
        if (Object.keys(headers).length) spec.headers = headers;
      }
    } catch (error) {
      say("server-message", error.message, false);
      return;
    }
    say("server-message", "Adding " + spec.name + "…", true);
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      const change = await api("POST", "/api/mcp/servers", spec);
      say("server-message", change.message, change.ok);
      if (change.ok) form.reset();
      syncTransport();
    } catch (error) {
      say("server-message", error.message, false);
    } finally {
      button.disabled = false;
    }
    refreshServers();
  });

  // -- tools ------------------------------------------------------------------------------------

  async function loadTools(selected) {
    try {
      state.tools = (await api("GET", "/api/mcp/tools")).tools;
    } catch {
      return;
    }
    renderToolList();
    const name = selected === undefined ? currentRoute().arg : selected;
    const tool = state.tools.find((t) => t.name === name);
    $("tool").hidden = !tool;
    if (tool && $("tool").dataset.name !== tool.name) showTool(tool);
  }

  function renderToolList() {
    const filter = $("tool-filter").value.trim().toLowerCase();
    const current = currentRoute().arg;
    const shown = state.tools.filter(
      (t) => !filter || t.name.toLowerCase().includes(filter) || (t.description || "").toLowerCase().includes(filter),
    );
    $("tools-count").textContent = shown.length + " of " + state.tools.length + " tools";
    $("tools").replaceChildren(
      ...shown.map((t) =>
        h("li", {},
          h("a", { href: "#/tools/" + encodeURIComponent(t.name), "aria-current": t.name === current ? "page" : null },
            h("span", { class: "tool-title", text: t.name }),
            h("span", { class: "muted small-text", text: t.server })))),
    );
    const active = $("tools").querySelector("[aria-current=page]");
    if (active) active.scrollIntoView({ block: "nearest" });
  }
  $("tool-filter").addEventListener("input", renderToolList);

  function showTool(tool) {
    const panel = $("tool");
    panel.dataset.name = tool.name;
    $("tool-name").textContent = tool.name;
    $("tool-origin").textContent = "from " + tool.server + (tool.server_name ? " (" + tool.server_name + ")" : "") + " · its own name: " + tool.tool;
    $("tool-description").textContent = tool.description || "No description.";
    $("tool-schema").textContent = JSON.stringify(tool.input_schema, null, 2);
    $("tool-fields").replaceChildren(...fieldsFor(tool.input_schema || {}));
    $("result").hidden = true;
    $("result-body").replaceChildren();
    $("tool-name").focus();
  }

  // One input per top-level property: string, number, integer, boolean and enum get native
  // controls; anything else (objects, arrays, unions) a JSON textarea.
  function fieldsFor(schema) {
    const props = schema.properties || {};
    const required = new Set(schema.required || []);
    const fields = [];
    for (const [name, prop] of Object.entries(props)) {
      const id = "arg-" + name;
      const type = Array.isArray(prop.type) ? prop.type.filter((t) => t !== "null")[0] : prop.type;
      const help = prop.description ? h("small", { id: id + "-help", text: prop.description }) : null;
      const title = prop.title && prop.title.toLowerCase() !== name.toLowerCase() ? h("span", { class: "arg-title", text: " · " + prop.title }) : null;
      const label = h("label", { for: id }, h("code", { text: name }), title, required.has(name) ? h("span", { class: "req", text: " (required)" }) : null);
      const common = { id, name, "data-arg": name, "aria-describedby": help ? id + "-help" : null, required: required.has(name) };
      let control;
      if (Array.isArray(prop.enum)) {
        control = h("select", { ...common, "data-kind": "enum" },
          required.has(name) ? null : h("option", { value: "", text: "—" }),
          ...prop.enum.map((v) => h("option", { value: JSON.stringify(v), text: String(v), selected: v === prop.default })));
      } else if (type === "boolean") {
        control = h("input", { ...common, type: "checkbox", "data-kind": "boolean", checked: prop.default === true });
        fields.push(h("div", { class: "field check" }, control, label, help));
        continue;
      } else if (type === "integer" || type === "number") {
        control = h("input", { ...common, type: "number", step: type === "integer" ? "1" : "any", "data-kind": type,
          value: prop.default !== undefined ? String(prop.default) : null, inputmode: type === "integer" ? "numeric" : "decimal" });
      } else if (type === "string") {
        control = h("input", { ...common, type: "text", "data-kind": "string", value: prop.default !== undefined ? String(prop.default) : null, autocomplete: "off" });
      } else {
        control = h("textarea", { ...common, rows: "4", "data-kind": "json", spellcheck: "false",
          placeholder: "JSON", text: prop.default !== undefined ? JSON.stringify(prop.default, null, 2) : "" });
      }
      fields.push(h("div", { class: "field" }, label, control, help));
    }
    if (!fields.length) fields.push(h("p", { class: "muted", text: "This tool takes no arguments." }));
    return fields;
  }

  function collectArguments() {
    const args = {};
    for (const el of $("tool-fields").querySelectorAll("[data-arg]")) {
      const name = el.dataset.arg;
      const kind = el.dataset.kind;
      if (kind === "boolean") {
        args[name] = el.checked;
        continue;
      }
      const raw = el.value;
      if (raw === "") {
        if (el.required) throw new Error(name + " is required");
        continue;
      }
      if (kind === "integer" || kind === "number") {
        const value = Number(raw);
        if (Number.isNaN(value) || (kind === "integer" && !Number.isInteger(value))) throw new Error(name + " must be " + (kind === "integer" ? "a whole number" : "a number"));
        args[name] = value;
      } else if (kind === "enum" || kind === "json") {
        try {
          args[name] = JSON.parse(raw);
        } catch {
          throw new Error(name + " is not valid JSON");
        }
      } else {
        args[name] = raw;
      }
    }
    return args;
  }

  $("tool-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = $("tool").dataset.name;
    const result = $("result");
    const body = $("result-body");
    result.hidden = false;
    let args;
    try {
      args = collectArguments();
    } catch (error) {
      body.replaceChildren(h("p", { class: "bad", role: "alert", text: error.message }));
      return;
    }
    const button = $("tool-run");
    button.disabled = true;
    body.replaceChildren(h("p", { class: "muted", text: "Calling " + name + "…" }));
    // A result that arrives after another tool was opened belongs to no panel on screen.
    const stillShown = () => $("tool").dataset.name === name;
    // A person is at this page: a confirm-tier tool waits for their answer, asked here (confirm=wait).
    const tag = randomTag();
    const path = "/api/mcp/tools/" + encodeURIComponent(name) + "/call?confirm=wait&confirm_tag=" + tag;
    const waiting = { done: false };
    try {
      const call = api("POST", path, args);
      askWhileWaiting(tag, waiting, stillShown);
      const answer = await call;
      if (stillShown()) renderResult(answer);
    } catch (error) {
      if (stillShown()) body.replaceChildren(h("p", { class: "bad", text: error.message }));
    } finally {
      waiting.done = true;
      button.disabled = false;
    }
  });

  function randomTag() {
    const bytes = new Uint8Array(12);
    crypto.getRandomValues(bytes);
    return "console-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  const CONFIRM_POLL_MS = 400;

  // While a call runs, the questions it raised (its confirm_tag's) are shown with Allow and Deny.
  async function askWhileWaiting(tag, waiting, stillShown) {
    const asked = new Set();
    while (!waiting.done) {
      await new Promise((resolve) => setTimeout(resolve, CONFIRM_POLL_MS));
      if (waiting.done) return;
      let listed;
      try {
        listed = await api("GET", "/api/mcp/confirmations?tag=" + tag);
      } catch {
        continue; // the call's own answer says what went wrong
      }
      for (const question of listed.confirmations) {
        if (asked.has(question.id) || waiting.done || !stillShown()) continue;
        asked.add(question.id);
        showQuestion(question, waiting);
      }
    }
  }

  function showQuestion(question, waiting) {
    const message = h("p", { class: "muted", role: "status" });
    const answer = async (approve) => {
      for (const b of buttons.querySelectorAll("button")) b.disabled = true;
      try {
        await api("POST", "/api/mcp/confirmations/" + encodeURIComponent(question.id), { approve });
        if (!waiting.done) panel.replaceChildren(h("p", { class: "muted", text: approve ? "Allowed; calling…" : "Denied." }));
      } catch (error) {
        message.textContent = error.message;
      }
    };
    const buttons = h("p", { class: "actions" },
      h("button", { type: "button", onclick: () => answer(true), text: "Allow" }),
      " ",
      h("button", { type: "button", class: "danger", onclick: () => answer(false), text: "Deny" }));
    const panel = h("div", { class: "question", role: "alertdialog", "aria-label": "Confirm this call" },
      h("p", { text: question.text }), buttons, message);
    $("result-body").replaceChildren(panel);
  }

  function renderResult(r) {
    const parts = [
      h("p", { class: "result-head" },
        h("span", { class: r.ok ? "badge ok" : "badge bad", text: r.ok ? "OK" : "Error" }),
        " ", h("span", { class: "muted", text: (r.duration_s * 1000).toFixed(0) + " ms" })),
    ];
    if (r.error && r.error.trim() !== (r.text || "").trim()) parts.push(h("p", { class: "bad", text: r.error }));
    for (const block of r.content || []) parts.push(renderBlock(block));
    if (r.structured) {
      parts.push(h("h4", { text: "Structured content" }), h("pre", { class: "json", text: JSON.stringify(r.structured, null, 2) }));
    }
    $("result-body").replaceChildren(...parts);
  }

  function dataUrl(mime, base64) {
    // Only plain media types reach a data: URL.
    return /^[\w.+-]+\/[\w.+-]+$/.test(mime || "") ? "data:" + mime + ";base64," + base64 : null;
  }

  function renderBlock(block) {
    if (block.type === "text") return h("pre", { class: "text", text: block.text });
    if (block.type === "image") {
      const src = dataUrl(block.mimeType, block.data);
      if (!src) return h("p", { text: "[image]" });
      const img = h("img", { src, alt: "Image returned by the tool (" + block.mimeType + ")", class: "media" });
      img.addEventListener("load", () => img.classList.toggle("tiny", img.naturalWidth < 48));
      return img;
    }
    if (block.type === "audio") {
      const src = dataUrl(block.mimeType, block.data);
      return src ? h("audio", { src, controls: true, "aria-label": "Audio returned by the tool" }) : h("p", { text: "[audio]" });
    }
    if (block.type === "resource_link") {
      return h("p", {}, "Resource link: ", h("code", { text: block.uri }), block.name ? " (" + block.name + ")" : "");
    }
    if (block.type === "resource" && block.resource) {
      const res = block.resource;
      return h("div", { class: "embedded" }, h("p", {}, "Resource ", h("code", { text: res.uri })),
        res.text !== undefined ? h("pre", { class: "text", text: res.text }) : h("p", { class: "muted", text: "[" + (res.mimeType || "binary") + "]" }));
    }
    return h("pre", { class: "json", text: JSON.stringify(block, null, 2) });
  }

  // -- audit ------------------------------------------------------------------------------------

  async function loadAudit() {
    const params = new URLSearchParams();
    const server = $("audit-server").value.trim();
    const since = $("audit-since").value;
    if (server) params.set("server", server);
    if (since) params.set("since", new Date(since).toISOString());
    let data;
    try {
      data = await api("GET", "/api/mcp/audit" + (params.toString() ? "?" + params : ""));
    } catch (error) {
      say("audit-message", error.status === 403 ? "The audit log needs an admin token." : error.message, false);
      $("audit-calls").replaceChildren();
      $("audit-actions").replaceChildren();
      return;
    }
    say("audit-message", data.calls.length + " calls, " + data.actions.length + " actions", true);
    $("audit-calls").replaceChildren(
      ...data.calls.map((c) =>
        h("tr", {},
          h("td", { "data-label": "Time", text: fmtTime(c.at) }),
          h("td", { "data-label": "Server", text: c.server }),
          h("td", { "data-label": "Tool", text: c.tool }),
          h("td", { "data-label": "Caller", text: c.caller || "—" }),
          h("td", { "data-label": "Outcome" }, h("div", {}, h("span", { class: "badge " + (c.outcome === "ok" ? "ok" : "bad"), text: c.outcome }),
            c.error ? h("span", { class: "server-error", text: c.error }) : null)),
          h("td", { "data-label": "Duration", class: "num", text: (c.duration_s * 1000).toFixed(0) + " ms" }))),
    );
    $("audit-actions").replaceChildren(
      ...data.actions.map((a) =>
        h("tr", {},
          h("td", { "data-label": "Time", text: fmtTime(a.at) }),
          h("td", { "data-label": "Actor", text: a.actor }),
          h("td", { "data-label": "Action", text: a.action }),
          h("td", { "data-label": "Server", text: a.server || "—" }),
          h("td", { "data-label": "Detail" }, h("code", { text: JSON.stringify(a.detail) })))),
    );
  }

  $("audit-form").addEventListener("submit", (event) => {
    event.preventDefault();
    loadAudit();
  });

  // -- my connections: the caller's own authorizations of servers that act as each user ----------------

  const connectionsPath = (name) => "/api/me/authorizations" + (name === undefined ? "" : "/" + encodeURIComponent(name));

  async function loadConnections() {
    let data;
    try {
      data = await api("GET", connectionsPath());
    } catch (error) {
      $("connections").hidden = true;
      $("connections-body").replaceChildren();
      // 403: a station token or a local caller has no authorizations of its own; the API says why.
      if (error.status === 403) {
        $("connections-message").textContent = error.message;
        $("connections-message").className = "message";
      } else {
        say("connections-message", error.message, false);
      }
      return;
    }
    $("connections").hidden = false;
    const listed = data.authorizations;
    $("connections-table").hidden = !listed.length;
    $("connections-none").hidden = listed.length > 0;
    $("connections-body").replaceChildren(
      ...listed.map((a) =>
        h("tr", { "data-connection": a.server },
          h("th", { scope: "row", "data-label": "Server", text: a.server }),
          h("td", { "data-label": "Upstream" }, h("code", { class: "target", text: a.server_url })),
          h("td", { "data-label": "Status" },
            h("span", { class: a.connected ? "badge ok" : "badge bad", text: a.connected ? "Connected" : "Not connected" })),
          h("td", { "data-label": "Token expires", text: a.expires_at ? fmtTime(a.expires_at) : "—" }),
          h("td", { "data-label": "Actions" }, h("div", { class: "actions" },
            a.connected ? null : connectionButton("Connect", a.server, "primary"),
            connectionButton("Revoke", a.server, "danger"))))),
    );
  }

  function connectionButton(label, name, extra) {
    return h("button", {
      type: "button",
      class: "small " + extra,
      "aria-label": label + " " + name,
      onclick: () => (label === "Revoke" ? revokeConnection(name) : connect(name)),
      text: label,
    });
  }

  async function connect(name) {
    // Opened now, while the click still counts as the person's: a tab opened after the answer is
    // often blocked. It must not reach back into this page (it will show another origin).
    const tab = window.open("", "_blank");
    if (tab) tab.opener = null;
    say("connections-message", "Starting the sign-in for " + name + "…", true);
    let started;
    try {
      started = await api("POST", connectionsPath(name));
    } catch (error) {
      if (tab) tab.close();
      say("connections-message", error.message, false);
      return;
    }
    const message = $("connections-message");
    message.className = "message ok";
    if (tab) {
      tab.location.href = started.authorization_url;
      message.replaceChildren("Sign in to authorize " + name + " in the new tab; this list updates when you come back.");
    } else {
      message.replaceChildren("Your browser blocked the new tab. ",
        h("a", { href: started.authorization_url, target: "_blank", rel: "noopener noreferrer", text: "Authorize " + name }),
        ", then come back here.");
    }
  }

  async function revokeConnection(name) {
    if (!confirm("Revoke your authorization of " + name + "? The station forgets it, and you authorize it again to use it.")) return;
    say("connections-message", "Revoking " + name + "…", true);
    try {
      const revoked = await api("DELETE", connectionsPath(name));
      say("connections-message", revoked.revoked ? "Revoked " + name + "." : "You had no authorization of " + name + ".", true);
    } catch (error) {
      say("connections-message", error.message, false);
    }
    loadConnections();
  }

  $("connect-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const name = $("connect-server").value.trim();
    if (name) connect(name);
  });
  $("connections-refresh").addEventListener("click", loadConnections);
  // Back from the sign-in's tab: show what it changed.
  window.addEventListener("focus", () => {
    if (state.ready && currentRoute().view === "connections") loadConnections();
  });

  start();
})();
