// Search snippets without TeX (book/_ext/book_html.py loads this on the search page).
// Sphinx's search page shows a snippet of each page it finds: the text of the page's
// HTML, where every formula is still TeX ("Let \(A = RP\) be ..."), since MathJax
// typesets it only in the reader's browser. Before Sphinx takes the text, each
// formula is rewritten here as plain text with Unicode symbols ("Let A = RP be ...").
(() => {
  const SYMBOLS = {
    alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", varepsilon: "ε",
    zeta: "ζ", eta: "η", theta: "θ", vartheta: "ϑ", iota: "ι", kappa: "κ",
    lambda: "λ", mu: "μ", nu: "ν", xi: "ξ", pi: "π", rho: "ρ", sigma: "σ",
    tau: "τ", upsilon: "υ", phi: "φ", varphi: "φ", chi: "χ", psi: "ψ", omega: "ω",
    Gamma: "Γ", Delta: "Δ", Theta: "Θ", Lambda: "Λ", Xi: "Ξ", Pi: "Π", Sigma: "Σ",
    Phi: "Φ", Psi: "Ψ", Omega: "Ω",
    le: "≤", leq: "≤", ge: "≥", geq: "≥", ne: "≠", neq: "≠", approx: "≈",
    sim: "∼", simeq: "≃", equiv: "≡", propto: "∝", ll: "≪", gg: "≫",
    in: "∈", notin: "∉", subset: "⊂", subseteq: "⊆", cup: "∪", cap: "∩",
    setminus: "∖", emptyset: "∅", varnothing: "∅", forall: "∀", exists: "∃",
    to: "→", rightarrow: "→", leftarrow: "←", Rightarrow: "⇒", Leftrightarrow: "⇔",
    implies: "⟹", iff: "⟺", mapsto: "↦", infty: "∞", partial: "∂", nabla: "∇",
    cdot: "·", cdots: "⋯", ldots: "…", dots: "…", times: "×", circ: "∘",
    otimes: "⊗", oplus: "⊕", pm: "±", mp: "∓", sum: "∑", prod: "∏", int: "∫",
    sqrt: "√", top: "ᵀ", T: "ᵀ", dagger: "†", star: "⋆", ast: "∗",
    lVert: "‖", rVert: "‖", Vert: "‖", "|": "‖", lvert: "|", rvert: "|", vert: "|",
    langle: "⟨", rangle: "⟩", lfloor: "⌊", rfloor: "⌋", lceil: "⌈", rceil: "⌉",
    R: "ℝ", E: "𝔼", Id: "Id", ell: "ℓ", hbar: "ℏ", prime: "′",
    "{": "{", "}": "}", "%": "%", "$": "$", "&": "&", "#": "#", "_": "_",
    ",": " ", ";": " ", ":": " ", "!": "", " ": " ", quad: " ", qquad: " ",
  };
  const BLACKBOARD = {R: "ℝ", N: "ℕ", Z: "ℤ", Q: "ℚ", C: "ℂ", E: "𝔼", P: "ℙ"};
  // commands dropped with their braces kept as text: \mathrm{x} -> x
  const STYLE = /^(mathrm|mathbf|mathit|mathsf|mathtt|mathcal|boldsymbol|bm|text|textrm|textbf|textit|operatorname|emph|mbox|hat|bar|tilde|widehat|widetilde|overline|underline|vec|dot|ddot)$/;
  const SIZING = /^(left|right|big|Big|bigg|Bigg|bigl|bigr|Bigl|Bigr|biggl|biggr|displaystyle|textstyle|scriptstyle|limits|nolimits|label|nonumber|notag|begin|end)$/;

  // The argument of a command: a {group} or a single character, and where it ends.
  function argument(tex, start) {
    let i = start;
    while (tex[i] === " ") i += 1;
    if (tex[i] !== "{") {
      if (tex[i] === "\\") {
        const m = /^\\([A-Za-z]+|.)/.exec(tex.slice(i));
        return m ? [m[0], i + m[0].length] : ["", i];
      }
      return [tex[i] || "", i + 1];
    }
    let depth = 0;
    for (let j = i; j < tex.length; j += 1) {
      if (tex[j] === "\\") { j += 1; continue; }
      if (tex[j] === "{") depth += 1;
      if (tex[j] === "}" && --depth === 0) return [tex.slice(i + 1, j), j + 1];
    }
    return [tex.slice(i + 1), tex.length];
  }

  function group(text) {
    return /^[\p{L}\p{N}.′ᵀ√]*$/u.test(text) ? text : "(" + text + ")";
  }

  // TeX as readable text: symbols in Unicode, fractions and roots spelled with / and √.
  function texToText(tex) {
    let out = "";
    for (let i = 0; i < tex.length;) {
      const c = tex[i];
      if (c === "\\") {
        const m = /^\\([A-Za-z]+|.)/.exec(tex.slice(i));
        if (!m) { i += 1; continue; }
        const name = m[1];
        i += m[0].length;
        if (name === "frac" || name === "dfrac" || name === "tfrac") {
          const [a, j] = argument(tex, i);
          const [b, k] = argument(tex, j);
          out += group(texToText(a)) + "/" + group(texToText(b));
          i = k;
        } else if (name === "sqrt") {
          const [a, j] = argument(tex, i);
          const inner = texToText(a);
          out += "√" + ([...inner].length > 1 ? "(" + inner + ")" : inner);
          i = j;
        } else if (name === "mathbb") {
          const [a, j] = argument(tex, i);
          out += BLACKBOARD[a] || a;
          i = j;
        } else if (name === "norm") {
          const [a, j] = argument(tex, i);
          out += "‖" + texToText(a) + "‖";
          i = j;
        } else if (name === "begin" || name === "end") {
          i = argument(tex, i)[1];  // the environment's name
        } else if (STYLE.test(name)) {
          const [a, j] = argument(tex, i);
          out += texToText(a);
          i = j;
        } else if (SIZING.test(name)) {
          // nothing: only the delimiter that follows is kept
        } else if (name in SYMBOLS) {
          out += SYMBOLS[name];
        } else if (name === "\\") {
          out += "; ";
        } else {
          out += name;  // \log, \max, \det, \tr, ...
        }
      } else if (c === "^" || c === "_") {
        const [a, j] = argument(tex, i + 1);
        const text = texToText(a);
        out += text === "ᵀ" || text === "′" ? text : c + group(text);
        i = j;
      } else if (c === "{" || c === "}") {
        i += 1;
      } else if (c === "&") {
        out += " ";
        i += 1;
      } else {
        out += c;
        i += 1;
      }
    }
    return out.replace(/\s+/g, " ").trim();
  }

  // The formula of a Sphinx math element without its delimiters.
  function formulaText(raw) {
    const tex = raw.trim().replace(/^\\\(|\\\)$/g, "").replace(/^\\\[|\\\]$/g, "")
      .replace(/^\$\$?|\$\$?$/g, "");
    return texToText(tex);
  }

  window.bookTexToText = texToText;  // for tests

  function install() {
    if (typeof Search === "undefined" || !Search.htmlToText || Search.htmlToText.bookMath) return;
    const original = Search.htmlToText;
    const htmlToText = (htmlString, anchor) => {
      const doc = new DOMParser().parseFromString(htmlString, "text/html");
      doc.querySelectorAll(".math").forEach((element) => {
        const display = element.tagName === "DIV";
        element.textContent = (display ? " " : "") + formulaText(element.textContent)
          + (display ? " " : "");
      });
      return original(doc.documentElement.outerHTML, anchor);
    };
    htmlToText.bookMath = true;
    Search.htmlToText = htmlToText;
  }

  install();
  document.addEventListener("DOMContentLoaded", install);
})();
