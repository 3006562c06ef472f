// The definition editor: CodeMirror 6 on the definition page's two text areas (the data points and
// rules as YAML, the parser as JavaScript), bundled with esbuild into one module that Vigil serves
// itself (editor-bundle.ts). The page works without it: the text areas are posted as they are.
// Here: syntax highlighting, line numbers, the error line of a run marked, and the draft checked as
// it is typed (debounced, by the console's check route, which runs /definitions/check), each
// problem marked at its line in its editor and listed below them. Nothing here is inline (CSP).
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { javascript } from '@codemirror/lang-javascript';
import { yaml } from '@codemirror/lang-yaml';
import {
  bracketMatching,
  defaultHighlightStyle,
  indentOnInput,
  syntaxHighlighting,
} from '@codemirror/language';
import { lintGutter, setDiagnostics } from '@codemirror/lint';
import { EditorState } from '@codemirror/state';
import {
  drawSelection,
  EditorView,
  highlightActiveLine,
  highlightActiveLineGutter,
  highlightSpecialChars,
  keymap,
  lineNumbers,
} from '@codemirror/view';

const CHECK_DELAY_MS = 400;

/** A diagnostic at `line` (1-based) and `column` of `doc`, clamped to the document. */
function diagnosticAt(doc, line, column, message) {
  const n = Math.min(Math.max(1, line ?? 1), doc.lines);
  const l = doc.line(n);
  const from = Math.min(l.to, l.from + Math.max(0, (column ?? 1) - 1));
  return { from, to: Math.max(from, l.to), severity: 'error', message };
}

/**
 * Replaces a text area with an editor that keeps it up to date (the form posts the text area). The
 * editor lives in a shadow root of its own: there CodeMirror's styles go into a constructed style
 * sheet, which the CSP allows, where in the document it would add a <style> element, which the CSP
 * (style-src 'self', no 'unsafe-inline') refuses. The console's editor.css is linked into it.
 */
function enhance(textarea, cssUrl, onChange) {
  const language = textarea.dataset.editor === 'yaml' ? yaml() : javascript();
  const readOnly = textarea.readOnly;
  const host = document.createElement('div');
  host.className = 'code-editor-host';
  const shadow = host.attachShadow({ mode: 'open' });
  if (cssUrl) {
    const link = document.createElement('link');
    link.rel = 'stylesheet';
    link.href = cssUrl;
    shadow.append(link);
  }
  textarea.insertAdjacentElement('afterend', host);
  const view = new EditorView({
    root: shadow,
    parent: shadow,
    state: EditorState.create({
      doc: textarea.value,
      extensions: [
        lineNumbers(),
        highlightActiveLineGutter(),
        highlightSpecialChars(),
        history(),
        drawSelection(),
        indentOnInput(),
        bracketMatching(),
        highlightActiveLine(),
        syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
        language,
        lintGutter(),
        keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
        EditorState.readOnly.of(readOnly),
        EditorView.editable.of(!readOnly),
        // Through CodeMirror: a class set on its DOM by hand goes at its next update.
        EditorView.editorAttributes.of({ class: 'code-editor' }),
        EditorView.contentAttributes.of({
          'aria-label': textarea.getAttribute('aria-label') ?? textarea.name,
        }),
        EditorView.updateListener.of((u) => {
          if (!u.docChanged) return;
          textarea.value = u.state.doc.toString();
          onChange();
        }),
      ],
    }),
  });
  textarea.hidden = true;
  textarea.dataset.enhanced = 'true';
  return view;
}

/** Shows `problems` (of /definitions/check) in their editors and in the list under them. */
function showProblems(list, views, problems, fixed) {
  for (const [part, view] of Object.entries(views)) {
    const own = problems.filter((p) => p.part === part);
    const marked = [...own, ...fixed.filter((p) => p.part === part)];
    view.dispatch(
      setDiagnostics(
        view.state,
        marked.map((p) => diagnosticAt(view.state.doc, p.line, p.column, p.message)),
      ),
    );
  }
  if (!list) return;
  list.replaceChildren(
    ...problems.map((p) => {
      const li = document.createElement('li');
      const where = document.createElement('span');
      where.className = 'mono';
      where.textContent = `${p.part === 'parser' ? 'Parser' : 'Definition'}${p.line ? ` line ${p.line}` : ''}${p.column ? `:${p.column}` : ''}`;
      const code = document.createElement('span');
      code.className = 'mono code';
      code.textContent = p.code;
      li.append(where, ' ', code, ' ', p.message);
      return li;
    }),
  );
  list.hidden = problems.length === 0;
  const status = document.getElementById('editor-check-status');
  if (status)
    status.textContent =
      problems.length === 0
        ? 'No problems found.'
        : `${problems.length} problem${problems.length === 1 ? '' : 's'}.`;
}

function init() {
  const form = document.getElementById('editor-form');
  if (!form) return;
  const areas = {
    definition: form.querySelector('textarea[data-editor="yaml"]'),
    parser: form.querySelector('textarea[data-editor="javascript"]'),
  };
  const list = document.getElementById('editor-problems');
  const checkUrl = form.dataset.checkUrl;
  const csrf = form.querySelector('input[name="_csrf"]')?.value ?? '';
  let timer;
  let asked = 0;
  const views = {};
  // The error a run or the server found at the page's rendering: marked until the text changes.
  let fixed = [];
  for (const [part, area] of Object.entries(areas)) {
    if (!area) continue;
    if (area.dataset.errorLine)
      fixed.push({
        part,
        line: Number(area.dataset.errorLine),
        column: Number(area.dataset.errorColumn ?? '1'),
        message: area.dataset.errorMessage ?? 'error',
      });
  }

  async function check() {
    if (!checkUrl || !areas.definition || !areas.parser) return;
    const mine = ++asked;
    const res = await window
      .fetch(checkUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
        body: JSON.stringify({ definition: areas.definition.value, parserSource: areas.parser.value }),
        credentials: 'same-origin',
      })
      .catch(() => null);
    if (!res || !res.ok || mine !== asked) return;
    const answer = await res.json();
    if (mine !== asked) return;
    showProblems(list, views, answer.data?.problems ?? [], fixed);
    form.dataset.checked = String(asked);
  }

  const changed = () => {
    fixed = [];
    window.clearTimeout(timer);
    timer = window.setTimeout(() => void check(), CHECK_DELAY_MS);
  };
  const cssUrl = form.dataset.editorCss;
  for (const [part, area] of Object.entries(areas)) if (area) views[part] = enhance(area, cssUrl, changed);
  if (fixed.length > 0) showProblems(null, views, [], fixed);
  // A payload picked from the recent ones fills the payload box.
  const pick = document.getElementById('payload-pick');
  const box = document.getElementById('wb-payload');
  if (pick && box) {
    pick.addEventListener('change', () => {
      const option = pick.selectedOptions[0];
      if (option?.dataset.payload !== undefined) box.value = option.dataset.payload;
    });
  }
  document.body.dataset.editor = 'ready';
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
else init();
