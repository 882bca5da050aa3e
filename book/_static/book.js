// Near the Identity: what the reader's browser does beyond the theme
// (book/_ext/book_html.py adds this file to every page; tests/test_browser.py checks it).
//
// - MathJax 4 breaks a long display formula to the width its box has when the page
//   is typeset. When the window's width changes (a phone turned sideways, a window
//   resized), the displays are laid out again for the new width.
// - A box that still has to scroll sideways (a display that cannot break, a figure
//   shown larger than the column so that its text stays readable on a phone) is
//   marked with the class "book-scrolls", which draws a shadow at the edge where
//   more is hidden (book.css).
(() => {
  // Every box of the article that scrolls sideways (a display formula that cannot
  // break, a wide figure on a phone, a code cell, a table) gets the cue, and a tab
  // stop when it holds none, so that the keyboard can scroll it (WCAG 2.1.1). The
  // theme does the latter once, at load; this does it again after a change of width.
  const FOCUSABLE = "a[href], button, input, select, textarea, summary, [tabindex]";

  function markScrollers() {
    const article = document.querySelector(".bd-article");
    if (!article) return;
    for (const box of article.querySelectorAll("*")) {
      const more = box.scrollWidth > box.clientWidth + 1
        && ["auto", "scroll"].includes(getComputedStyle(box).overflowX);
      if (box.classList.contains("book-scrolls") !== more) box.classList.toggle("book-scrolls", more);
      const reachable = (el) => el.tabIndex >= 0 && el.matches(FOCUSABLE);
      if (more && !reachable(box) && !Array.from(box.querySelectorAll(FOCUSABLE)).some(reachable)) {
        box.setAttribute("tabindex", "0");
      }
    }
  }

  // Lays the display formulas out again for the current width (from MathJax's
  // metrics on). Inline formulas need nothing: MathJax marks where they may break
  // and the browser breaks them wherever the line ends.
  async function relayoutMath() {
    const mj = window.MathJax;
    if (mj && mj.startup && mj.startup.promise) {
      await mj.startup.promise;
      const state = mj._ && mj._.core && mj._.core.MathItem && mj._.core.MathItem.STATE;
      const doc = mj.startup.document;
      if (doc && state && doc.rerenderPromise && doc.math) {
        const all = Array.from(doc.math);
        const displays = all.filter((item) => item.display);
        if (displays.length) {
          doc.math.clear();  // only the displays are laid out again
          displays.forEach((item) => doc.math.push(item));
          try {
            await doc.rerenderPromise(state.METRICS);
          } finally {
            doc.math.clear();
            all.forEach((item) => doc.math.push(item));
          }
        }
      }
    }
    markScrollers();  // also on a page without formulas
  }
  window.bookRelayoutMath = relayoutMath;

  let width = window.innerWidth;
  let timer = null;
  window.addEventListener("resize", () => {
    if (window.innerWidth === width) return;  // only a change of width re-breaks lines
    width = window.innerWidth;
    clearTimeout(timer);
    timer = setTimeout(relayoutMath, 250);
  });

  function start() {
    const mj = window.MathJax;
    if (mj && mj.startup && mj.startup.promise) mj.startup.promise.then(markScrollers);
    else markScrollers();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
  window.addEventListener("load", markScrollers);
})();
