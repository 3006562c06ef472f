/**
 * Device name globs of routes: `*` any run of characters (none too), `?` exactly one, every other
 * character itself (case-sensitive). Matched with two pointers and no regular expression: a glob
 * comes from an operator, and a backtracking pattern built from it (`*a*a*a…*b`) could hold the
 * notifier's event loop for minutes on one long name. This matcher takes at most about
 * glob length × name length steps.
 */

/**
 * Whether the whole of `name` matches `glob` (allocates nothing). On a mismatch after a `*`, the
 * star takes one more character and matching resumes after it; only the latest star needs
 * revisiting, since anything an earlier star could absorb the latest one can too.
 */
export function matchesGlob(glob: string, name: string): boolean {
  let g = 0;
  let n = 0;
  let star = -1;
  let starName = 0;
  while (n < name.length) {
    const c = glob[g];
    if (c === '*') {
      star = g++;
      starName = n;
    } else if (c !== undefined && (c === '?' || c === name[n])) {
      g++;
      n++;
    } else if (star >= 0) {
      g = star + 1;
      n = ++starName;
    } else return false;
  }
  while (glob[g] === '*') g++;
  return g === glob.length;
}
