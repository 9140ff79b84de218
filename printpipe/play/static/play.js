// The player's screen: draws what the game server returns, animates the reveal, and checks a
// unit's inclusion proof in the browser (WebCrypto SHA-256, RFC 9162). It decides nothing.
"use strict";

const REVEAL_STEP_MS = 50; // 20 cells: the last starts after 0.95 s, done by 1.25 s (<= 2 s)
const FLIP_MS = 300;
const ERRORS = {
  sold_out: "Toutes les unités du bloc ont été jouées : le jeu est épuisé.",
  daily_limit: "Limite de mise quotidienne atteinte : vous pourrez rejouer demain.",
  insufficient_funds: "Solde insuffisant pour jouer.",
  unauthorized: "Vous n'êtes pas connecté : ouvrez votre lien de connexion.",
  not_found: "Introuvable.",
  login_used: "Ce lien de connexion a déjà servi : il n'ouvre qu'une session. "
    + "Demandez-en un nouveau.",
  login_expired: "Ce lien de connexion a expiré (24 h) : demandez-en un nouveau.",
  login_unknown: "Ce lien de connexion n'est pas valable : demandez-en un nouveau.",
};

const state = { game: null, player: null, current: null, commitments: null, replayed: null };
const $ = (id) => document.getElementById(id);

function euros(amount) {
  return amount.toLocaleString("fr-FR") + "\u00a0€";
}

function cents(amount) {
  const text = (amount / 100).toLocaleString("fr-FR", {
    minimumFractionDigits: amount % 100 ? 2 : 0, maximumFractionDigits: 2 });
  return text + "\u00a0€";
}

class ApiError extends Error {
  constructor(status, kind, message) { super(message); this.status = status; this.kind = kind; }
}

async function api(path, { method = "GET", headers = {}, body } = {}) {
  const init = { method, headers: { ...headers }, credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const data = await response.json();
  if (!response.ok) throw new ApiError(response.status, data.error, data.detail);
  return data;
}

function frenchError(error) {
  if (error instanceof ApiError) return ERRORS[error.kind] || "Refusé : " + error.message;
  return "Connexion perdue : réessayez (une partie jouée reste dans votre historique).";
}

function say(text) { $("status").textContent = text; }

// -- drawing --------------------------------------------------------------------------------

function cell(code, winning, revealed) {
  const symbol = state.game.symbols[code];
  const div = document.createElement("div");
  div.className = "cell" + (revealed ? " revealed" : "");
  div.dataset.symbol = code;
  div.dataset.winning = String(winning);
  const back = document.createElement("div");
  back.className = "back";
  back.textContent = "?";
  back.setAttribute("aria-hidden", "true");
  const face = document.createElement("div");
  face.className = "face";
  face.style.background = symbol.tint;
  face.innerHTML = symbol.svg; // drawn by the server from the game's own pictograms
  const caption = document.createElement("span");
  caption.className = "caption";
  caption.textContent = symbol.caption;
  face.append(caption);
  div.append(back, face);
  div.setAttribute("role", "img");
  div.setAttribute("aria-label", revealed ? symbol.caption : "case cachée");
  if (revealed && winning) div.classList.add("win");
  return div;
}

function drawGrid(container, grid, revealed) {
  container.replaceChildren(...grid.symbols.map((code, i) => cell(code, grid.winning[i], revealed)));
}

function reveal(container, grid) {
  const cells = [...container.children];
  const reduced = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  return new Promise((resolve) => {
    cells.forEach((div, i) => {
      setTimeout(() => {
        div.classList.add("revealed");
        div.setAttribute("aria-label", state.game.symbols[div.dataset.symbol].caption);
      }, reduced ? 0 : i * REVEAL_STEP_MS);
    });
    const total = reduced ? 0 : (cells.length - 1) * REVEAL_STEP_MS + FLIP_MS;
    setTimeout(() => {
      cells.forEach((div, i) => { if (grid.winning[i]) div.classList.add("win"); });
      resolve();
    }, total);
  });
}

function winsText(wins) {
  return wins.length ? "Gains : " + wins.join(" + ") : "Aucun gain dans cette grille.";
}

function lotText(lot) {
  return lot > 0 ? "Gagné ! Votre lot : " + euros(lot) : "Pas de gain cette fois-ci.";
}

function showBalance(centsValue) {
  $("balance").textContent = cents(centsValue);
  $("balance").dataset.cents = String(centsValue);
}

// -- a play ---------------------------------------------------------------------------------

function newKey() {
  return "play-" + crypto.randomUUID();
}

async function startPlay() {
  $("play").disabled = true;
  $("lot").hidden = true;
  $("extra").hidden = true;
  $("wins-1").textContent = "";
  say("Mise en cours…");
  // one key for every attempt of this play: a lost answer is answered again, never debited twice
  const key = sessionStorage.getItem("pending-play") || newKey();
  sessionStorage.setItem("pending-play", key);
  let play = null;
  for (let attempt = 0; attempt < 3 && play === null; attempt++) {
    try {
      play = await api(`/v1/players/${encodeURIComponent(state.player)}/plays`,
        { method: "POST", headers: { "Idempotency-Key": key }, body: {} });
    } catch (error) {
      if (error instanceof ApiError) {
        sessionStorage.removeItem("pending-play");
        say(frenchError(error));
        $("play").disabled = false;
        return;
      }
      await new Promise((r) => setTimeout(r, 500 * (attempt + 1)));
    }
  }
  if (play === null) {
    say(frenchError(null));
    $("play").disabled = false;
    return;
  }
  sessionStorage.removeItem("pending-play");
  state.current = play;
  showBalance(play.balance_cents - play.lot_eur * 100); // the stake debited; the lot comes at the end
  drawGrid($("grid-1"), play.unit.grids[0], false);
  $("grid-1").dataset.serial = play.serial;
  say("Cliquez sur GO pour découvrir la grille.");
  $("go").disabled = false;
  $("go").focus();
}

async function go() {
  const play = state.current;
  $("go").disabled = true;
  say("");
  await reveal($("grid-1"), play.unit.grids[0]);
  $("wins-1").textContent = winsText(play.unit.grids[0].wins);
  if (play.unit.second_grid) {
    drawGrid($("grid-2"), play.unit.grids[1], false);
    $("go").hidden = true; // the second grid has its own GO: one on the screen at a time
    $("go-2").hidden = false;
    $("extra").hidden = false;
    say(state.game.second_grid_opened);
    $("go-2").disabled = false;
    $("go-2").focus();
    return;
  }
  finish();
}

async function goExtra() {
  const play = state.current;
  $("go-2").disabled = true;
  say("");
  await reveal($("grid-2"), play.unit.grids[1]);
  $("wins-2").textContent = winsText(play.unit.grids[1].wins);
  finish();
}

function finish() {
  const play = state.current;
  $("go-2").hidden = true; // the second grid stays in view, its GO done with
  $("go").hidden = false;
  const lot = $("lot");
  lot.textContent = lotText(play.lot_eur);
  lot.dataset.lotEur = String(play.lot_eur);
  lot.classList.toggle("won", play.lot_eur > 0);
  lot.hidden = false;
  showBalance(play.balance_cents);
  say(`Unité ${play.serial} jouée.`);
  $("play").disabled = false;
  $("play").focus();
  loadHistory();
  loadAccount();
}

// -- history and verification ---------------------------------------------------------------

async function loadHistory() {
  const data = await api(`/v1/players/${encodeURIComponent(state.player)}/plays`);
  const list = $("history");
  list.replaceChildren(...data.plays.map((play) => {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.dataset.play = play.play;
    button.dataset.serial = play.serial;
    const when = new Date(play.played_at).toLocaleString("fr-FR");
    button.dataset.block = String(play.block);
    button.textContent = `${play.serial} · bloc ${play.block} · ${when} · ${play.lot_eur > 0 ? "lot " + euros(play.lot_eur) : "perdant"}`;
    button.addEventListener("click", () => showReplay(play));
    item.append(button);
    return item;
  }));
}

function showReplay(play) {
  state.replayed = play;
  $("replay").hidden = false;
  $("replay").dataset.serial = play.serial;
  $("replay-title").textContent = `Unité ${play.serial} (bloc ${play.block})`;
  const grids = play.unit.grids.map((grid, g) => {
    const wrap = document.createElement("div");
    const title = document.createElement("p");
    title.textContent = g === 0 ? "Grille" : state.game.second_grid_title;
    const container = document.createElement("div");
    container.className = "grid";
    container.dataset.grid = String(g + 1);
    drawGrid(container, grid, true);
    const wins = document.createElement("p");
    wins.className = "wins";
    wins.textContent = winsText(grid.wins);
    wrap.append(title, container, wins);
    return wrap;
  });
  $("replay-grids").replaceChildren(...grids);
  $("replay-lot").textContent = lotText(play.lot_eur);
  $("replay-lot").dataset.lotEur = String(play.lot_eur);
  $("verify-result").textContent = "";
  $("verify-result").className = "verify";
  delete $("verify-result").dataset.ok;
  $("verify").focus();
}

function bytesOf(hex) {
  if (!/^([0-9a-f]{2})*$/.test(hex)) throw new Error("not hexadecimal");
  return Uint8Array.from(hex.match(/../g) || [], (b) => parseInt(b, 16));
}

function hexOf(bytes) {
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function sha256(...parts) {
  const size = parts.reduce((n, p) => n + p.length, 0);
  const all = new Uint8Array(size);
  let at = 0;
  for (const p of parts) { all.set(p, at); at += p.length; }
  return new Uint8Array(await crypto.subtle.digest("SHA-256", all));
}

// RFC 9162, 2.1.3.2: the leaf hashed, folded with the audit path, gives the root.
async function rootOf(proof) {
  const t = proof.ticket;
  const prize = new Uint8Array(8);
  new DataView(prize.buffer).setBigUint64(0, BigInt(t.prize_eur));
  const virn = t.virn === null ? new Uint8Array(0) : new TextEncoder().encode(t.virn);
  const leaf = [bytesOf(t.salt), new TextEncoder().encode(t.serial), prize, virn];
  let r = await sha256(new Uint8Array([0]), ...leaf);
  let fn = proof.leaf_index;
  let sn = proof.tree_size - 1;
  for (const hex of proof.audit_path) {
    const h = bytesOf(hex);
    if (fn % 2 === 1 || fn === sn) {
      r = await sha256(new Uint8Array([1]), h, r);
      while (fn % 2 === 0 && fn !== 0) { fn = Math.floor(fn / 2); sn = Math.floor(sn / 2); }
    } else {
      r = await sha256(new Uint8Array([1]), r, h);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? hexOf(r) : null;
}

async function verify() {
  const play = state.replayed;
  const out = $("verify-result");
  out.textContent = "Vérification…";
  out.className = "verify";
  let ok = false;
  let text;
  try {
    if (state.commitments === null) {
      state.commitments = (await api("/v1/commitments")).commitments;
    }
    const proof = await api(
      `/v1/players/${encodeURIComponent(state.player)}/plays/${play.play}/proof`);
    const published = state.commitments.find((c) => c.statement.game.id === proof.game.id
      && c.statement.block === proof.block);
    const root = published ? published.statement.tree.root : null;
    if (root === null) {
      text = "Preuve invalide : aucun engagement publié pour ce bloc.";
    } else if (proof.ticket.serial !== play.serial || proof.ticket.prize_eur !== play.lot_eur) {
      text = "Preuve invalide : elle ne porte pas sur cette unité ni sur ce lot.";
    } else if (proof.tree_size !== published.statement.tickets || proof.root !== root) {
      text = "Preuve invalide : elle ne se rapporte pas à l'engagement publié.";
    } else if ((await rootOf(proof)) !== root) {
      text = "Preuve invalide : le chemin ne mène pas à la racine publiée.";
    } else {
      ok = true;
      const unit = play.lot_eur > 0
        ? `l'unité ${play.serial} et son lot de ${euros(play.lot_eur)} font`
        : `l'unité ${play.serial}, perdante, fait`;
      text = `Preuve valide : ${unit} partie du bloc ${proof.block} engagé avant la vente `
        + `(racine ${root.slice(0, 16)}…).`;
    }
  } catch (error) {
    text = "Preuve invalide : " + (error instanceof ApiError ? frenchError(error) : "illisible.");
  }
  out.textContent = text;
  out.dataset.ok = String(ok);
  out.classList.add(ok ? "ok" : "bad");
}

async function loadAccount() {
  const account = await api(`/v1/players/${encodeURIComponent(state.player)}`);
  showBalance(account.balance_cents);
  $("limit").textContent = `Votre limite de mise : ${cents(account.daily_stake_limit_cents)} par jour `
    + `(misé aujourd'hui : ${cents(account.staked_today_cents)}).`;
}

// -- start ----------------------------------------------------------------------------------

// The login link's token, spent for a session cookie; what to tell the player when it opened
// none (used already, expired, unknown), else null.
async function login() {
  // a demo login link (#login=) or the operator's launch link (#launch=, a signed JWT)
  const match = location.hash.match(/^#login=([A-Za-z0-9_-]{16,128})$/)
    || location.hash.match(/^#launch=([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/);
  if (!match) return null;
  const path = location.hash.startsWith("#launch=") ? "/v1/launches" : "/v1/sessions";
  history.replaceState(null, "", location.pathname); // the token is spent: off the address bar
  try {
    await api(path, { method: "POST", body: { token: match[1] } });
    return null;
  } catch (error) {
    return frenchError(error);
  }
}

async function start() {
  const game = await api("/v1/game");
  state.game = game;
  document.title = game.title;
  $("title").textContent = game.title;
  $("play").textContent = "JOUEZ " + game.stake_text.replace(/\s/g, "");
  $("help-line").textContent = game.help_line;
  $("help-line-2").textContent = game.help_line;
  $("rules").textContent = game.rules;
  $("extra-title").textContent = game.second_grid_title;
  $("paytable").replaceChildren(...game.paytable.map((row) => {
    const item = document.createElement("li");
    const art = document.createElement("span");
    art.innerHTML = game.symbols[row.symbol].svg;
    const text = document.createElement("span");
    text.textContent = `${game.symbols[row.symbol].caption} : ${row.text}`;
    item.append(art, text);
    return item;
  }));
  $("play").addEventListener("click", startPlay);
  $("go").addEventListener("click", go);
  $("go-2").addEventListener("click", goExtra);
  $("verify").addEventListener("click", verify);
  const refused = await login();
  try {
    state.player = (await api("/v1/me")).player;
  } catch (error) {
    say(refused || frenchError(error)); // a used link is told so, not "not logged in"
    return;
  }
  $("player").textContent = state.player;
  await loadAccount();
  await loadHistory();
  const invite = `sur « ${$("play").textContent} » pour jouer.`;
  say(refused ? `${refused} Vous êtes déjà connecté : cliquez ${invite}` : `Cliquez ${invite}`);
  $("play").disabled = false;
  $("play").focus();
}

document.addEventListener("DOMContentLoaded", () => {
  start().catch((error) => say(frenchError(error)));
});
