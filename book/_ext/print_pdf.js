// The printed edition: turns the one-page HTML build (Sphinx's singlehtml) into
// the book to print, or into one chapter's exercise sheet. Loaded by
// book/_ext/print_pdf.py before MathJax has typeset anything (the math is still
// TeX); print_pdf.py typesets what each function shows. Every function starts
// again from the pristine article, so they can run one after another.

(() => {
  const source = document.querySelector("article.bd-article").cloneNode(true);
  const PROOF_BOXES = ["theorem", "lemma", "proposition", "corollary", "definition",
                       "assumption", "conjecture", "example", "remark", "property",
                       "axiom", "observation", "criterion", "algorithm"];

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // What every printed document shares: links inside the one page, nothing
  // that only works on screen, folded code left out, dropdowns unfolded.
  function cleaned() {
    const root = source.cloneNode(true);
    for (const a of root.querySelectorAll("a[href]")) {
      const href = a.getAttribute("href");
      const hash = href.indexOf("#");
      if (hash > 0 && !/^[a-z]+:/.test(href)) a.setAttribute("href", href.slice(hash));
    }
    root.querySelectorAll(
      ".headerlink, details.hide.above-input, button, .toggle-button, .copybtn"
    ).forEach((node) => node.remove());
    root.querySelectorAll(".toggle-hidden").forEach((node) => node.classList.remove("toggle-hidden"));
    root.querySelectorAll("details").forEach((node) => node.setAttribute("open", ""));
    root.querySelectorAll(".dropdown").forEach((node) => node.classList.remove("dropdown", "toggle"));
    return root;
  }

  function headingText(section) {
    const heading = section.querySelector(":scope > h1, :scope > h2, :scope > h3, :scope > h4");
    return heading ? heading.textContent.trim() : "";
  }

  function chapters(root) {
    return [...root.querySelectorAll("section")].filter((section) => {
      const h2 = section.querySelector(":scope > h2");
      return h2 && h2.querySelector(".section-number");
    });
  }

  // The sections of a chapter (h3), in order; some sit inside wrappers.
  function sectionsOf(chapter) {
    return [...chapter.querySelectorAll("section")].filter((section) =>
      section.querySelector(":scope > h3") && section.parentElement.closest("section") === chapter);
  }

  // Links whose targets are not printed (the library reference, or on a sheet
  // the rest of the book) keep their text only.
  function unlinkMissing(node) {
    const ids = new Set([...node.querySelectorAll("[id]")].map((element) => element.id));
    for (const a of node.querySelectorAll("a[href^='#']")) {
      if (!ids.has(decodeURIComponent(a.getAttribute("href").slice(1)))) a.removeAttribute("href");
    }
  }

  function show(node) {
    if (window.MathJax && MathJax.typesetClear) MathJax.typesetClear();  // forget the last
    document.body.replaceChildren(node);
    window.scrollTo(0, 0);
  }

  // The whole book: title page, contents, preface, the five chapters, the
  // solutions as an appendix and the bibliography.
  window.printBook = (meta) => {
    const root = cleaned();
    const book = el("div", "print-book");

    const title = el("div", "print-title");
    title.append(el("div", "print-title-name", meta.title),
                 el("div", "print-title-sub", meta.subtitle));
    const about = el("div", "print-title-meta");
    for (const line of meta.lines) about.append(el("div", "", line));
    title.append(about);
    book.append(title);

    const toc = el("nav", "print-toc");
    toc.append(el("h1", "", "Contents"));
    const list = el("ol");
    toc.append(list);
    book.append(toc);

    // The landing page's title becomes the preface.
    const top = root.querySelector("section");
    const h1 = top.querySelector(":scope > h1");
    h1.textContent = "Preface";
    top.id = "preface";
    top.classList.add("print-chapter");
    book.append(root);

    // The library reference (about 70 pages of API documentation) stays online.
    for (const section of root.querySelectorAll("section")) {
      if (/resnet_theory library/.test(headingText(section))) section.remove();
    }
    const chapterSections = chapters(root);
    for (const section of chapterSections) section.classList.add("print-chapter");

    // Solutions move to an appendix, grouped by chapter; each exercise points there.
    const appendix = el("section", "print-chapter");
    appendix.id = "print-solutions";
    appendix.append(el("h2", "", "Solutions to the exercises"));
    appendix.append(el("p", "", "The solutions follow the exercises in the order of " +
      "the book. Where a solution checks its answer with code, the code is printed too."));
    let solutions = 0;
    for (const section of chapterSections) {
      const found = [...section.querySelectorAll("div.solution")];
      if (!found.length) continue;
      const group = el("section");
      group.id = "print-solutions-" + section.id;
      group.append(el("h3", "", "Chapter " + headingText(section)));
      for (const solution of found) {
        const link = solution.querySelector(".admonition-title a[href^='#']");
        const exercise = link && root.querySelector(
          "[id='" + link.getAttribute("href").slice(1) + "']");
        solution.id = solution.id || "print-solution-" + solutions;
        if (exercise) {
          const pointer = el("p", "print-solution-link");
          const back = el("a", "", "Solution in the appendix");
          back.setAttribute("href", "#" + solution.id);
          pointer.append(back);
          exercise.after(pointer);
        }
        group.append(solution);
        solutions += 1;
      }
      appendix.append(group);
    }
    const last = chapterSections[chapterSections.length - 1];
    last.after(appendix);
    for (const section of root.querySelectorAll("section")) {
      if (section.querySelector(":scope > h2") && section.parentElement.closest("section") === top
          && last.compareDocumentPosition(section) & Node.DOCUMENT_POSITION_FOLLOWING
          && !last.contains(section)) {
        section.classList.add("print-chapter");  // library reference, bibliography
      }
    }

    // Contents: the preface, each chapter with its sections, the back matter.
    const entries = [{node: top, level: "chapter", text: "Preface"}];
    for (const section of root.querySelectorAll("section.print-chapter")) {
      if (section === top) continue;
      entries.push({node: section, level: "chapter", text: headingText(section)});
      if (chapterSections.includes(section)) {
        for (const sub of sectionsOf(section)) {
          if (sub.querySelector(":scope > h3 .section-number")) {
            entries.push({node: sub, level: "section", text: headingText(sub)});
          }
        }
      }
    }
    for (const entry of entries) {
      const item = el("li", "print-toc-" + entry.level);
      const link = el("a", "", entry.text);
      link.setAttribute("href", "#" + entry.node.id);
      const page = el("span", "print-toc-page", "0");
      page.dataset.target = entry.node.id;
      item.append(link, el("span", "print-toc-fill"), page);
      list.append(item);
    }
    // The PDF's bookmarks (written by print_pdf.py, since Chromium's own doubled the
    // titles of headings that open a page): every heading of the printed text, with
    // its section's id. Links to all of them, in a box too small to see, make
    // Chromium record the page each one lands on.
    // Levels: the contents, the preface and each part that starts a page (a chapter,
    // the solutions, the bibliography) at the top; the preface's sections and a
    // chapter's sections below; a section's subsections below those. A section whose
    // id an earlier one has (each notebook has its "takeaways") gets one of its own,
    // so that its bookmark finds it.
    const outline = [];
    const ids = new Set();
    for (const heading of book.querySelectorAll(
        ".print-toc > h1, section > h1, section > h2, section > h3, section > h4")) {
      const target = heading.parentElement;
      if (!target.id || ids.has(target.id)) target.id = "print-outline-" + outline.length;
      ids.add(target.id);
      const top = heading.tagName === "H1" || target.classList.contains("print-chapter");
      const level = top ? 0 : heading.tagName === "H4" ? 2 : 1;
      // a bookmark holds plain text: formulas as search_math.js writes them in snippets
      const copy = heading.cloneNode(true);
      for (const math of copy.querySelectorAll(".math")) {
        const tex = math.textContent.trim().replace(/^\\\(|\\\)$/g, "");
        math.textContent = window.bookTexToText ? window.bookTexToText(tex) : tex;
      }
      outline.push({id: target.id, level, text: copy.textContent.replace(/\s+/g, " ").trim()});
    }
    const targets = el("div", "print-outline-targets");
    targets.setAttribute("aria-hidden", "true");
    const printChapters = [...root.querySelectorAll("section.print-chapter")];
    for (const id of new Set([...outline.map((item) => item.id),
                              ...printChapters.map((section) => section.id),
                              ...[...appendix.querySelectorAll(":scope > section")].map((s) => s.id)])) {
      const link = el("a", "", ".");
      link.setAttribute("href", "#" + id);
      targets.append(link);
    }
    toc.append(targets);
    unlinkMissing(book);
    show(book);
    return {
      outline,
      // each chapter, and the ids where the printed parts start (for the chapters' PDFs)
      chapterParts: chapterSections.map((section) => ({
        number: Number(section.querySelector(":scope > h2 .section-number").textContent.trim()
                       .replace(/\.$/, "")),
        id: section.id,
        solutions: appendix.querySelector("[id='print-solutions-" + section.id + "']")
          ? "print-solutions-" + section.id : null})),
      starts: printChapters.map((section) => section.id)
        .concat([...appendix.querySelectorAll(":scope > section")].map((s) => s.id)),
      toc: entries.map((entry) => ({id: entry.node.id, text: entry.text})),
      chapters: chapterSections.length,
      exercises: book.querySelectorAll("div.exercise").length,
      solutions,
      figures: book.querySelectorAll("figure img, .cell_output img").length,
      // drawn as vector graphics, not as images
      svgFigures: [...book.querySelectorAll("figure img, .cell_output img")]
        .filter((img) => /\.svg$/i.test(img.getAttribute("src") || "")).length,
    };
  };

  // Page numbers found in the first printing go into the contents.
  window.setTocPages = (pages) => {
    for (const span of document.querySelectorAll(".print-toc-page")) {
      span.textContent = String(pages[span.dataset.target] ?? "");
    }
  };

  // One chapter's exercise sheet: its exercises without solutions, under the
  // sections they belong to, each preceded by the statements it refers to.
  window.printSheet = (number, meta) => {
    const root = cleaned();
    root.querySelectorAll("div.solution").forEach((node) => node.remove());
    const chapter = chapters(root).find((section) =>
      section.querySelector(":scope > h2 .section-number").textContent.trim() === number + ".");
    if (!chapter) throw new Error("no chapter " + number);
    const sheet = el("div", "print-book print-sheet");
    const head = el("div", "print-sheet-head");
    head.append(el("div", "print-sheet-book", meta.title + " \u00b7 exercise sheet"));
    head.append(el("h1", "", "Chapter " + headingText(chapter) + ": exercises"));
    const intro = el("p", "print-sheet-context",
      "The exercises of this chapter, without solutions, each under the section it " +
      "belongs to. Numbers of theorems, equations and figures are the book's; the " +
      "statements an exercise refers to are printed before it. The full text, with " +
      "the notebooks to run: " + meta.url);
    head.append(intro);
    head.append(el("p", "print-sheet-context",
      "What to hand in: for each exercise, the derivation or argument it asks for; " +
      "for a numerical exercise, also your code and the numbers it gives, in the " +
      "chapter's student notebook or on paper."));
    sheet.append(head);
    let count = 0;
    for (const section of sectionsOf(chapter)) {
      const exercises = [...section.querySelectorAll("div.exercise")];
      if (!exercises.length) continue;
      const part = el("section");
      part.append(el("h2", "", headingText(section)));
      const used = new Set();
      for (const exercise of exercises) {
        for (const a of exercise.querySelectorAll("a[href^='#']")) {
          const target = root.querySelector("[id='" + a.getAttribute("href").slice(1) + "']");
          if (!target || used.has(target)) continue;
          const box = target.closest(PROOF_BOXES.map((name) => "div.proof." + name).join(", "))
                      || target.closest("div.math") || (target.matches("div.math") && target);
          if (box && !used.has(box)) {
            used.add(box);
            const copy = box.cloneNode(true);
            copy.removeAttribute("id");
            copy.classList.add("print-sheet-context");
            part.append(copy);
          }
        }
        const copy = exercise.cloneNode(true);
        part.append(copy);
        count += 1;
      }
      sheet.append(part);
    }
    unlinkMissing(sheet);
    show(sheet);
    return {exercises: count, title: headingText(chapter)};
  };
})();
