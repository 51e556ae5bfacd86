// A small Markdown renderer for model replies that builds DOM nodes and
// never parses HTML: every piece of the model's text reaches the page as a
// text node (textContent), so markup in a reply shows as text. Links keep
// only http(s) and mailto targets; images become links (the page loads
// nothing from other hosts). An unclosed code fence renders as code, so a
// reply still streaming shows its code block as it grows.

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^( *)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const TABLE_RULE = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
const INLINE = new RegExp([
  "(`+)([^`]|[^`][\\s\\S]*?[^`])\\1(?!`)", // 1, 2: code span
  "\\*\\*(?=\\S)([\\s\\S]*?\\S)\\*\\*", // 3: strong
  "__(?=\\S)([\\s\\S]*?\\S)__", // 4: strong
  "~~(?=\\S)([\\s\\S]*?\\S)~~", // 5: strikethrough
  "\\*(?=[^\\s*])([\\s\\S]*?[^\\s*])\\*", // 6: emphasis
  "(?<![\\w])_(?=[^\\s_])([\\s\\S]*?[^\\s_])_(?![\\w])", // 7: emphasis
  "(!?)\\[([^\\]\\n]+)\\]\\(\\s*([^\\s()]+)\\s*\\)", // 8, 9, 10: link or image
  "(https?://[^\\s<>()\\[\\]]*[^\\s<>()\\[\\].,;:!?'\"])", // 11: bare URL
].join("|"));

export function renderMarkdown(text) {
  const fragment = document.createDocumentFragment();
  renderBlocks(text.replace(/\r\n?/g, "\n").split("\n"), fragment);
  return fragment;
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function renderBlocks(lines, parent) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (line.trim() === "") {
      i += 1;
    } else if ((m = FENCE.exec(line))) {
      const body = [];
      const close = new RegExp("^ {0,3}" + m[1][0] + "{" + m[1].length + ",}\\s*$");
      for (i += 1; i < lines.length && !close.test(lines[i]); i += 1) body.push(lines[i]);
      i += 1;
      parent.append(codeBlock(body.join("\n"), m[2]));
    } else if ((m = HEADING.exec(line))) {
      const h = el("h" + Math.min(6, m[1].length + 2));
      renderInline(m[2], h);
      parent.append(h);
      i += 1;
    } else if (RULE.test(line)) {
      parent.append(el("hr"));
      i += 1;
    } else if (QUOTE.test(line)) {
      const inner = [];
      for (; i < lines.length && (m = QUOTE.exec(lines[i])); i += 1) inner.push(m[1]);
      const quote = el("blockquote");
      renderBlocks(inner, quote);
      parent.append(quote);
    } else if (ITEM.test(line)) {
      i = renderList(lines, i, parent);
    } else if (line.includes("|") && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1])
               && lines[i + 1].includes("-")) {
      i = renderTable(lines, i, parent);
    } else {
      const para = [];
      for (; i < lines.length && lines[i].trim() !== "" && !startsBlock(lines[i]); i += 1) para.push(lines[i]);
      const p = el("p");
      para.forEach((piece, k) => {
        if (k) p.append(el("br"));
        renderInline(piece, p);
      });
      parent.append(p);
    }
  }
}

function startsBlock(line) {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || ITEM.test(line);
}

function codeBlock(code, lang) {
  const wrap = el("div", "code");
  const bar = el("div", "code-bar");
  bar.append(el("span", "code-lang", lang || "text"));
  const copy = el("button", "copy-code", "Copy");
  copy.type = "button";
  copy.dataset.action = "copy-code";
  copy.setAttribute("aria-label", "Copy code");
  bar.append(copy);
  const pre = el("pre");
  const codeNode = el("code", null, code);
  if (lang) codeNode.dataset.lang = lang;
  pre.append(codeNode);
  wrap.append(bar, pre);
  return wrap;
}

function renderList(lines, start, parent) {
  const first = ITEM.exec(lines[start]);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const list = el(ordered ? "ol" : "ul");
  if (ordered && parseInt(first[2], 10) !== 1) list.start = parseInt(first[2], 10);
  const lead = (line) => line.match(/^ */)[0].length;
  let i = start;
  while (i < lines.length) {
    const m = ITEM.exec(lines[i]);
    if (!m || m[1].length !== indent || /\d/.test(m[2]) !== ordered) break;
    const body = [m[3]];
    const width = indent + m[2].length + 1;
    for (i += 1; i < lines.length; i += 1) {
      const next = lines[i];
      if (next.trim() === "") {
        // A blank line ends the item unless the line after it is indented into the item.
        if (i + 1 < lines.length && lines[i + 1].trim() && lead(lines[i + 1]) > indent) {
          body.push("");
          continue;
        }
        break;
      }
      if (lead(next) > indent) body.push(next.slice(Math.min(lead(next), width)));
      else if (ITEM.test(next) || startsBlock(next)) break;
      else body.push(next.trim()); // a lazy continuation line
    }
    const li = el("li");
    if (body.length === 1) renderInline(body[0], li);
    else renderBlocks(body, li);
    list.append(li);
    // A blank line between two items keeps the list going.
    if (i + 1 < lines.length && lines[i].trim() === "") {
      const after = ITEM.exec(lines[i + 1]);
      if (after && after[1].length === indent) i += 1;
    }
  }
  parent.append(list);
  return i;
}

function cells(line) {
  return line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
}

function renderTable(lines, start, parent) {
  const wrap = el("div", "table");
  const table = el("table");
  const head = el("thead");
  const row = el("tr");
  for (const c of cells(lines[start])) {
    const th = el("th");
    renderInline(c, th);
    row.append(th);
  }
  head.append(row);
  table.append(head);
  const body = el("tbody");
  let i = start + 2;
  for (; i < lines.length && lines[i].includes("|") && lines[i].trim() !== ""; i += 1) {
    const tr = el("tr");
    for (const c of cells(lines[i])) {
      const td = el("td");
      renderInline(c, td);
      tr.append(td);
    }
    body.append(tr);
  }
  table.append(body);
  wrap.append(table);
  parent.append(wrap);
  return i;
}

export function safeHref(url) {
  return /^(https?:\/\/|mailto:)/i.test(url) ? url : null;
}

function link(href, label) {
  const a = el("a");
  a.href = href;
  a.rel = "noopener noreferrer nofollow";
  a.target = "_blank";
  renderInline(label, a);
  return a;
}

export function renderInline(text, parent) {
  let rest = text;
  while (rest) {
    const m = INLINE.exec(rest);
    if (!m) {
      parent.append(document.createTextNode(rest));
      return;
    }
    if (m.index) parent.append(document.createTextNode(rest.slice(0, m.index)));
    rest = rest.slice(m.index + m[0].length);
    if (m[1]) {
      parent.append(el("code", null, m[2].replace(/^ (.*) $/, "$1")));
    } else if (m[3] || m[4]) {
      const strong = el("strong");
      renderInline(m[3] || m[4], strong);
      parent.append(strong);
    } else if (m[5]) {
      const del = el("del");
      renderInline(m[5], del);
      parent.append(del);
    } else if (m[6] || m[7]) {
      const em = el("em");
      renderInline(m[6] || m[7], em);
      parent.append(em);
    } else if (m[9]) {
      const href = safeHref(m[10]);
      const label = m[8] ? "image: " + m[9] : m[9];
      if (href) parent.append(link(href, label));
      else parent.append(document.createTextNode(m[0]));
    } else if (m[11]) {
      parent.append(link(m[11], m[11]));
    }
  }
}
