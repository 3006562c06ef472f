/** The sign-in form and the pages for errors (not found, refused). */
import { html, type Html } from '../html.ts';
import { paths } from './format.ts';
import { notice } from './layout.ts';

export interface SignInModel {
  env: string;
  username: string;
  /** The sign-in form's anti-forgery token (double-submit, before there is a session). */
  csrf: string;
  error?: string | undefined;
  /** The user has MFA and sent no code: the code field is asked for. */
  askCode?: boolean;
  next?: string | undefined;
  signedOut?: boolean;
}

export function signInBody(m: SignInModel): Html {
  return html`<div class="sign-in">
<div class="card sign-in-card">
<h1>Sign in</h1>
<p class="sub">to the Vigil console of your environment</p>
${m.signedOut ? notice('ok', 'You are signed out.') : ''}
${m.error ? notice('error', m.error) : ''}
<form method="post" action="${paths.signIn}" class="stack-form">
<input type="hidden" name="_csrf" value="${m.csrf}">
${m.next ? html`<input type="hidden" name="next" value="${m.next}">` : ''}
<div class="field"><label for="si-env">Environment</label>
<input id="si-env" name="env" value="${m.env}" required autocomplete="organization" autocapitalize="none" spellcheck="false"${m.env === '' ? html` autofocus` : ''}></div>
<div class="field"><label for="si-user">Username</label>
<input id="si-user" name="username" value="${m.username}" required autocomplete="username" autocapitalize="none" spellcheck="false"${m.env !== '' && !m.askCode ? html` autofocus` : ''}></div>
<div class="field"><label for="si-pass">Password</label>
<input id="si-pass" name="password" type="password" required autocomplete="current-password"></div>
<div class="field"><label for="si-code">Authentication code</label>
<input id="si-code" name="code" inputmode="numeric" pattern="[0-9]{6}" maxlength="6" autocomplete="one-time-code"${m.askCode ? html` required autofocus aria-describedby="si-code-hint"` : html` aria-describedby="si-code-hint"`}>
<p class="hint" id="si-code-hint">${m.askCode ? 'This account uses multi-factor authentication: enter the 6-digit code from your app, and your password again.' : 'Only if your account uses multi-factor authentication.'}</p></div>
<button type="submit" class="btn btn-primary btn-block">Sign in</button>
</form>
</div>
</div>`;
}

/** An error page: its title, the error's code (when it has one) and message, and a way on. */
export function errorBody(title: string, message: string, signedIn: boolean, code?: string): Html {
  return html`<div class="card error-card"><h1>${title}</h1><p>${code ? html`<span class="code error-code">${code}</span> ` : ''}${message}</p><p><a href="${signedIn ? paths.fleet : paths.signIn}">${signedIn ? 'Back to the fleet' : 'Sign in'}</a></p></div>`;
}
