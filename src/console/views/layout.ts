/**
 * The frame of every console page: the head (one stylesheet, ES modules, no inline script or style),
 * the top bar with the environment, the navigation (with Manage for admins) and the signed-in user,
 * a message shown once after a change (the flash), and the main content.
 */
import { html, type Html } from '../html.ts';
import type { ConsoleSession } from '../sessions.ts';
import { paths } from './format.ts';

export type NavKey = 'fleet' | 'alarms' | 'events' | 'ingestion' | 'definitions' | 'manage';

const NAV: { key: NavKey; label: string; href: string }[] = [
  { key: 'fleet', label: 'Fleet', href: paths.fleet },
  { key: 'alarms', label: 'Alarms', href: paths.alarms },
  { key: 'events', label: 'Events', href: paths.events },
  { key: 'ingestion', label: 'Ingestion log', href: paths.ingestion },
  { key: 'definitions', label: 'Definitions', href: paths.definitions },
];

/** Versioned asset URLs (assets.ts), so that they can be cached for good. */
export interface AssetUrls {
  css: string;
  consoleJs: string;
  chartsJs: string;
  uplotCss: string;
  icon: string;
}

export interface PageOptions {
  title: string;
  assets: AssetUrls;
  session?: ConsoleSession | undefined;
  active?: NavKey;
  body: Html;
  /** The live view of the page (`/console/live?…`); the page updates itself from it. */
  live?: string;
  /** The device page's charts. */
  charts?: boolean;
  /** Whether the user manages the environment: the top bar links the management pages. */
  manage?: boolean;
  /** A message about the change just made, shown once above the content. */
  flash?: Flash | undefined;
}

/** A message shown once on the page a change redirected to. */
export interface Flash {
  kind: 'ok' | 'error';
  text: string;
}

export function page(o: PageOptions): Html {
  const doc = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${o.title} · Vigil</title>
<link rel="icon" href="${o.assets.icon}" type="image/svg+xml">
<link rel="stylesheet" href="${o.assets.css}">
${o.charts ? html`<link rel="stylesheet" href="${o.assets.uplotCss}">` : ''}
<script type="module" src="${o.assets.consoleJs}"></script>
${o.charts ? html`<script type="module" src="${o.assets.chartsJs}"></script>` : ''}
</head>
<body${o.live ? html` data-live="${o.live}"` : ''}>
<a class="skip" href="#main">Skip to content</a>
${o.session ? topBar(o.session, o.active, o.live !== undefined, o.manage === true) : bareTopBar()}
<main id="main" tabindex="-1">
${o.flash ? html`<div class="notice notice-${o.flash.kind} flash-message" role="status">${o.flash.text}</div>` : ''}
${o.body}
</main>
</body>
</html>
`;
  return doc;
}

function topBar(session: ConsoleSession, active: NavKey | undefined, live: boolean, manage: boolean): Html {
  return html`<header class="topbar${manage ? ' has-manage' : ''}">
<div class="topbar-row">
<a class="brand" href="${paths.fleet}"><span class="brand-mark" aria-hidden="true"></span>Vigil</a>
<span class="env" title="Environment">${session.env}</span>
${live ? html`<span class="live" id="live-status" data-state="off" role="status">Connecting…</span>` : ''}
<div class="user">
${
  // On a narrow screen Manage sits here, so that the navigation below keeps to one row.
  manage
    ? html`<a class="manage-top" href="${paths.manage}"${active === 'manage' ? html` aria-current="page"` : ''}>Manage</a>`
    : ''
}
<span class="user-name">${session.username}<span class="role">${session.role}</span></span>
<form method="post" action="${paths.signOut}">
<input type="hidden" name="_csrf" value="${session.csrf}">
<button type="submit" class="btn btn-ghost">Sign out</button>
</form>
</div>
</div>
<nav aria-label="Main">
<ul>
${NAV.map(
  (n) =>
    html`<li><a href="${n.href}"${n.key === active ? html` aria-current="page"` : ''}>${n.label}</a></li>`,
)}${
  manage
    ? html`<li class="nav-manage"><a href="${paths.manage}"${active === 'manage' ? html` aria-current="page"` : ''}>Manage</a></li>`
    : ''
}
</ul>
</nav>
</header>`;
}

function bareTopBar(): Html {
  return html`<header class="topbar"><div class="topbar-row"><span class="brand"><span class="brand-mark" aria-hidden="true"></span>Vigil</span></div></header>`;
}

/** A page heading with an optional line under it and actions on the right. */
export function pageHeader(title: Html | string, sub?: Html | string, actions?: Html): Html {
  return html`<div class="page-head">
<div><h1>${title}</h1>${sub ? html`<p class="sub">${sub}</p>` : ''}</div>
${actions ?? ''}
</div>`;
}

/** A message box: `error` (role alert) or `note`. */
export function notice(kind: 'error' | 'note' | 'ok', text: Html | string): Html {
  return html`<div class="notice notice-${kind}"${kind === 'error' ? html` role="alert"` : ''}>${text}</div>`;
}
