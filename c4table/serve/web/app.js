// c4table analysis board: plain JavaScript, no build step, no outside files.
// It asks the server's JSON API (api/BOARD?moves=M, the object `c4table lookup --json` prints)
// and draws the board, each column's outcome and distance for the side to move, and the best moves.
"use strict";

const state = {
  boards: [],          // [{board, width, height, k, entries}]
  board: null,         // the entry of boards being shown
  moves: "",           // columns played, 1-based digits
  redo: [],            // undone moves, last undone last
  flipped: false,
  computer: "",        // "", "A" or "B": the side perfect play takes
  probe: null,         // the API's answer for the current position
  seq: 0,              // number of the latest request, to drop stale answers
};
const cache = new Map();
const $ = (id) => document.getElementById(id);

function describe(outcome, distance) {
  const unit = distance === 1 ? "ply" : "plies";
  return (outcome === "draw" ? "draw" : outcome + " wins") + " in " + distance + " " + unit;
}

// Rank of a move for the side to move, as c4table.table.move_rank: lower is better.
function rank(m, mover) {
  if (m.outcome === mover) return [0, m.distance];
  if (m.outcome === "draw") return [1, 0];
  return [2, -m.distance];
}
function cmp(a, b) { return a[0] - b[0] || a[1] - b[1]; }
function bestMoves(probe) {
  if (!probe.moves.length) return [];
  const ranks = probe.moves.map((m) => rank(m, probe.to_move));
  const top = ranks.reduce((x, y) => (cmp(x, y) <= 0 ? x : y));
  return probe.moves.filter((m, i) => cmp(ranks[i], top) === 0);
}
// The computer's move, as c4table.play.choose_move: a best move, nearest the centre.
function chooseMove(probe) {
  const centre = (state.board.width + 1) / 2;
  return bestMoves(probe).reduce((x, y) => {
    const dx = Math.abs(x.column - centre), dy = Math.abs(y.column - centre);
    return dx < dy || (dx === dy && x.column < y.column) ? x : y;
  });
}

// Chips of the position: grid[col][row], row 0 at the bottom; "A", "B" or "".
function chips(moves) {
  const w = state.board.width, h = state.board.height;
  const grid = Array.from({ length: w }, () => Array(h).fill(""));
  for (let i = 0; i < moves.length; i++) {
    const col = grid[Number(moves[i]) - 1];
    col[col.indexOf("")] = i % 2 === 0 ? "A" : "B";
  }
  return grid;
}

async function api(path) {
  if (cache.has(path)) return cache.get(path);
  const r = await fetch(path);
  let body;
  try { body = await r.json(); } catch (e) { body = { error: "HTTP " + r.status }; }
  if (!r.ok) throw new Error(body.error || "HTTP " + r.status);
  if (cache.size > 5000) cache.clear();
  cache.set(path, body);
  return body;
}

function updateUrl() {
  const q = new URLSearchParams();
  q.set("board", state.board.board);
  q.set("moves", state.moves);
  if (state.computer) q.set("computer", state.computer);
  if (state.flipped) q.set("flip", "1");
  const url = location.pathname + "?" + q.toString();
  history.replaceState(null, "", url);
  $("share").href = url;
}

function render() {
  const b = state.board, p = state.probe;
  const el = $("board");
  el.style.setProperty("--w", b.width);
  el.style.setProperty("--h", b.height);
  el.classList.toggle("flipped", state.flipped);
  const grid = chips(state.moves);
  const byCol = new Map(p ? p.moves.map((m) => [m.column, m]) : []);
  const best = new Set(p ? bestMoves(p).map((m) => m.column) : []);
  const busy = p && state.computer === p.to_move && !p.terminal;
  // a won game: the cells of its winning line ([column, row], 1-based), marked on the board
  const won = new Set(p && p.winning_cells ? p.winning_cells.map(([c, r]) => c + ":" + r) : []);
  el.replaceChildren();
  for (let c = 1; c <= b.width; c++) {
    const m = byCol.get(c);
    const col = document.createElement("button");
    col.type = "button";
    col.className = "col";
    col.dataset.column = c;
    const label = document.createElement("span");
    label.className = "label";
    if (m && p) {
      const kind = m.outcome === "draw" ? "draw" : m.outcome === p.to_move ? "win" : "loss";
      label.classList.add(kind);
      label.dataset.outcome = m.outcome;
      label.dataset.distance = m.distance;
      const word = document.createElement("span"), dist = document.createElement("span");
      word.className = "kind";
      word.textContent = (best.has(c) ? "\u2605" : "") + kind;
      dist.className = "dist";
      dist.textContent = m.distance;
      label.append(word, dist);
      if (best.has(c)) label.classList.add("best");
      col.title = "column " + c + ": " + describe(m.outcome, m.distance) + (best.has(c) ? " (best)" : "");
      col.setAttribute("aria-label", col.title);
    } else {
      label.textContent = "\u00a0";
      col.disabled = true;
      col.setAttribute("aria-label", "column " + c + ": no move");
    }
    if (busy) col.disabled = true;
    col.appendChild(label);
    const slots = document.createElement("span");
    slots.className = "slots";
    const lastCol = Number(state.moves.slice(-1)), lastRow = grid[c - 1].lastIndexOf("A") > grid[c - 1].lastIndexOf("B")
      ? grid[c - 1].lastIndexOf("A") : grid[c - 1].lastIndexOf("B");
    for (let r = b.height - 1; r >= 0; r--) {
      const cell = document.createElement("span");
      cell.className = "cell" + (grid[c - 1][r] ? " " + grid[c - 1][r] : "") +
        (c === lastCol && r === lastRow ? " last" : "") + (won.has(c + ":" + (r + 1)) ? " won" : "");
      slots.appendChild(cell);
    }
    col.appendChild(slots);
    const num = document.createElement("span");
    num.className = "num";
    num.textContent = c;
    col.appendChild(num);
    col.addEventListener("click", () => play(c));
    el.appendChild(col);
  }
  let text;
  if (!p) text = "loading…";
  else if (p.terminal) text = "ply " + p.ply + ": game over, " + (p.outcome === "draw" ? "draw" : p.outcome + " has won");
  else text = "ply " + p.ply + ", " + p.to_move + " to move: " + describe(p.outcome, p.distance) +
    (state.computer === p.to_move ? " (perfect play is thinking)" : "");
  $("status").textContent = text;
  $("status").className = p && !p.terminal ? "to-" + p.to_move : "";
  $("movestr").textContent = state.moves || "(empty board)";
  $("undo").disabled = state.moves.length <= rootMoves().length;
  $("redo").disabled = !state.redo.length;
}

async function load() {
  const seq = ++state.seq;
  state.probe = null;
  updateUrl();
  render();
  try {
    const p = await api(positionPath(state.board.board, state.moves));
    if (seq !== state.seq) return;
    state.probe = p;
  } catch (e) {
    if (seq !== state.seq) return;
    $("status").textContent = "error: " + e.message;
    return;
  }
  render();
  const p = state.probe;
  if (state.computer === p.to_move && !p.terminal) {
    setTimeout(() => {
      if (seq === state.seq && state.probe === p) { state.moves += chooseMove(p).column; state.redo = []; load(); }
    }, 350);
  }
}

function play(c) {
  const p = state.probe;
  if (!p || p.terminal || !p.moves.some((m) => m.column === c)) return;
  if (state.computer === p.to_move) return;
  setNotice("");
  state.moves += String(c);
  state.redo = [];
  load();
}

// With perfect play on one side, undo and redo step back to the human's turn.
function humanTurn(moves) { return !state.computer || (moves.length % 2 === 0 ? "A" : "B") !== state.computer; }
// A rooted table (board.root, a move string) holds only the positions from its root on: the
// page starts there and never undoes below it.
function rootMoves() { return (state.board && state.board.root) || ""; }
function undo() {
  const root = rootMoves();
  if (state.moves.length <= root.length) return;
  setNotice("");
  do {
    state.redo.push(state.moves.slice(-1));
    state.moves = state.moves.slice(0, -1);
  } while (state.moves.length > root.length && !humanTurn(state.moves));
  load();
}
function redo() {
  if (!state.redo.length) return;
  setNotice("");
  do { state.moves += state.redo.pop(); } while (state.redo.length && !humanTurn(state.moves));
  load();
}

// The API's path for a position (the page's requests, and the link's check, ask the same).
function positionPath(board, moves) {
  return "api/" + encodeURIComponent(board) + "?moves=" + encodeURIComponent(moves);
}

// A message above the board (the link's position could not be shown); "" hides it.
function setNotice(text) {
  $("notice").textContent = text;
  $("notice").hidden = !text;
}

// Show board `name` (a served one) at `moves` (a position of its table; "": its root).
function selectBoard(name, moves) {
  state.board = state.boards.find((b) => b.board === name);
  state.moves = moves || rootMoves();
  state.redo = [];
  $("board-select").value = state.board.board;
  load();
}

async function start() {
  try {
    state.boards = await api("api/boards");
  } catch (e) {
    $("status").textContent = "error: " + e.message;
    return;
  }
  const sel = $("board-select");
  for (const b of state.boards) {
    const o = document.createElement("option");
    o.value = b.board;
    o.textContent = b.board + " (" + b.width + " columns, " + b.height + " rows)";
    sel.appendChild(o);
  }
  $("board-picker").hidden = state.boards.length < 2;
  const q = new URLSearchParams(location.search);
  state.flipped = q.get("flip") === "1";
  state.computer = ["A", "B"].includes(q.get("computer")) ? q.get("computer") : "";
  $("computer").value = state.computer;
  sel.addEventListener("change", () => { setNotice(""); selectBoard(sel.value, ""); });
  $("undo").addEventListener("click", undo);
  $("redo").addEventListener("click", redo);
  $("flip").addEventListener("click", () => { state.flipped = !state.flipped; updateUrl(); render(); });
  $("reset").addEventListener("click", () => { setNotice(""); state.moves = rootMoves(); state.redo = []; load(); });
  $("computer").addEventListener("change", (e) => { state.computer = e.target.value; load(); });
  document.addEventListener("keydown", (e) => {
    if (e.target.tagName === "SELECT" || e.ctrlKey || e.metaKey || e.altKey) return;
    if (/^[1-9]$/.test(e.key)) play(Number(e.key));
    else if (e.key === "ArrowLeft") undo();
    else if (e.key === "ArrowRight") redo();
    else if (e.key === "f") $("flip").click();
  });
  // The link's position: the server checks it (the board served, each move legal) and its
  // message is shown above the board, which then shows the start of a served board instead.
  const name = q.get("board") || state.boards[0].board;
  const served = state.boards.find((b) => b.board === name);
  const moves = q.get("moves") || (served && served.root) || "";
  try {
    await api(positionPath(name, moves));
  } catch (e) {
    const shown = served || state.boards[0];
    setNotice("This link's position cannot be shown: " + e.message + ". Showing " + shown.board +
      " from the start instead.");
    selectBoard(shown.board, "");
    return;
  }
  selectBoard(name, moves);
}

start();
