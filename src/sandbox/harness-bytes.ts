/**
 * JavaScript of the byte helpers every parser context gets, evaluated by the harness before the
 * user's script: `atob` and `btoa` with the web's semantics, and `base64ToBytes`, `bytesToBase64`,
 * `hexToBytes`, `bytesToHex` on plain Arrays of byte values (docs/sandbox.md, "Helpers").
 *
 * The helpers are ordinary globals (writable, configurable: a codec may define its own of the same
 * name, with `function` or `const`). They call only intrinsics captured before user code runs, and
 * read their tables from typed arrays (no prototype is consulted), so a parser that replaces
 * `String.fromCharCode` or `Array.prototype.push` does not change what they answer. The expression
 * evaluates to the harness's own hex decoder, which builds a codec's `input.bytes`.
 */
export const BYTE_HELPERS_SOURCE = String.raw`(function () {
  const uncurryThis = Function.prototype.bind.bind(Function.prototype.call);
  const charCodeAt = uncurryThis(String.prototype.charCodeAt);
  const fromCharCode = String.fromCharCode;
  const isInteger = Number.isInteger;
  const defineProperty = Object.defineProperty;
  const toText = String;
  const ErrorType = Error;
  const TypeErrorType = TypeError;
  const RangeErrorType = RangeError;
  const SyntaxErrorType = SyntaxError;
  const jsonStringify = JSON.stringify;

  const BASE64_DIGITS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const HEX_DIGITS = '0123456789abcdef';
  // Digit value by character code (under 128), -1 for a character that is none.
  const base64Values = new Int8Array(128).fill(-1);
  const base64UrlValues = new Int8Array(128).fill(-1);
  const hexValues = new Int8Array(128).fill(-1);
  for (let i = 0; i < 64; i++) {
    base64Values[charCodeAt(BASE64_DIGITS, i)] = i;
    base64UrlValues[charCodeAt(BASE64_DIGITS, i)] = i;
  }
  base64UrlValues[45] = 62; // '-'
  base64UrlValues[95] = 63; // '_'
  for (let i = 0; i < 16; i++) hexValues[charCodeAt(HEX_DIGITS, i)] = i;
  for (let i = 0; i < 6; i++) hexValues[65 + i] = 10 + i;
  const hexPairs = [];
  for (let i = 0; i < 256; i++) hexPairs[i] = HEX_DIGITS[i >> 4] + HEX_DIGITS[i & 15];

  // ASCII whitespace as the web's forgiving base64 defines it: tab, line feed, form feed, carriage return, space.
  function isSpace(c) {
    return c === 32 || c === 10 || c === 13 || c === 9 || c === 12;
  }

  function quoted(text, at) {
    return jsonStringify(text[at]);
  }

  /** The bytes of base64 text (whitespace ignored, '=' padding optional), or why it is not base64. */
  function decodeBase64(text, values) {
    const bytes = [];
    let count = 0;
    let buffer = 0;
    let bits = 0;
    let digits = 0;
    let padding = 0;
    for (let i = 0; i < text.length; i++) {
      const c = charCodeAt(text, i);
      if (isSpace(c)) continue;
      if (c === 61) {
        padding++;
        continue;
      }
      const value = c < 128 ? values[c] : -1;
      if (value < 0) return quoted(text, i) + ' at index ' + i + ' is not a base64 digit';
      if (padding > 0) return "'=' padding must come last";
      buffer = ((buffer << 6) | value) & 0x3fff;
      bits += 6;
      digits++;
      if (bits >= 8) {
        bits -= 8;
        bytes[count++] = (buffer >> bits) & 255;
      }
    }
    if (padding > 0 && (padding > 2 || (digits + padding) % 4 !== 0)) return "the '=' padding does not fit the length";
    if (digits % 4 === 1) return 'the text ends with a single base64 digit of a group';
    return bytes;
  }

  function encodeBase64(bytes) {
    const n = bytes.length;
    let text = '';
    let i = 0;
    for (; i + 2 < n; i += 3) {
      const t = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
      text += BASE64_DIGITS[t >> 18] + BASE64_DIGITS[(t >> 12) & 63] + BASE64_DIGITS[(t >> 6) & 63] + BASE64_DIGITS[t & 63];
    }
    if (n - i === 1) {
      const t = bytes[i] << 16;
      text += BASE64_DIGITS[t >> 18] + BASE64_DIGITS[(t >> 12) & 63] + '==';
    } else if (n - i === 2) {
      const t = (bytes[i] << 16) | (bytes[i + 1] << 8);
      text += BASE64_DIGITS[t >> 18] + BASE64_DIGITS[(t >> 12) & 63] + BASE64_DIGITS[(t >> 6) & 63] + '=';
    }
    return text;
  }

  /** The bytes of hex text, two digits a byte in either case, whitespace anywhere ignored; throws a SyntaxError. */
  function decodeHex(text, name) {
    const bytes = [];
    let count = 0;
    let high = -1;
    for (let i = 0; i < text.length; i++) {
      const c = charCodeAt(text, i);
      const value = c < 128 ? hexValues[c] : -1;
      if (value < 0) {
        if (isSpace(c)) continue;
        throw new SyntaxErrorType(name + ': ' + quoted(text, i) + ' at index ' + i + ' is not a hex digit');
      }
      if (high < 0) {
        high = value;
      } else {
        bytes[count++] = (high << 4) | value;
        high = -1;
      }
    }
    if (high >= 0) throw new SyntaxErrorType(name + ': an odd number of hex digits (the last byte has one)');
    return bytes;
  }

  /** A plain Array copy of an array-like of integers 0–255; throws a TypeError or RangeError naming the bad entry. */
  function byteList(bytes, name) {
    if (bytes === null || typeof bytes !== 'object') {
      throw new TypeErrorType(name + ' expects an array of bytes, not ' + (bytes === null ? 'null' : typeof bytes));
    }
    const length = bytes.length;
    if (!isInteger(length) || length < 0) throw new TypeErrorType(name + ' expects an array of bytes (with a length)');
    const list = [];
    for (let i = 0; i < length; i++) {
      const b = bytes[i];
      if (!isInteger(b) || b < 0 || b > 255) {
        const shown = typeof b === 'number' ? toText(b) : typeof b;
        throw new RangeErrorType(name + ': bytes[' + i + '] is ' + shown + ', not an integer 0–255');
      }
      list[i] = b;
    }
    return list;
  }

  function binaryOf(bytes) {
    let text = '';
    for (let i = 0; i < bytes.length; i++) text += fromCharCode(bytes[i]);
    return text;
  }

  // The web's conversion to DOMString: anything goes through String, except a Symbol or nothing at all.
  function domString(args, name) {
    if (args.length === 0) throw new TypeErrorType(name + ': 1 argument required, but only 0 present');
    if (typeof args[0] === 'symbol') throw new TypeErrorType(name + ': cannot convert a Symbol to a string');
    return toText(args[0]);
  }

  // Browsers throw a DOMException named InvalidCharacterError, which ECMAScript alone does not have.
  function invalidCharacter(message) {
    const err = new ErrorType(message);
    defineProperty(err, 'name', { value: 'InvalidCharacterError', writable: true, configurable: true });
    return err;
  }

  function stringArg(value, name) {
    if (typeof value !== 'string') throw new TypeErrorType(name + ' expects a string, not ' + (value === null ? 'null' : typeof value));
    return value;
  }

  const helpers = {
    atob: function atob(data) {
      const bytes = decodeBase64(domString(arguments, 'atob'), base64Values);
      if (typeof bytes === 'string') throw invalidCharacter('atob: the string to be decoded is not correctly encoded: ' + bytes);
      return binaryOf(bytes);
    },
    btoa: function btoa(data) {
      const binary = domString(arguments, 'btoa');
      const bytes = [];
      for (let i = 0; i < binary.length; i++) {
        const c = charCodeAt(binary, i);
        if (c > 255) throw invalidCharacter('btoa: the string to be encoded contains characters outside of the Latin1 range');
        bytes[i] = c;
      }
      return encodeBase64(bytes);
    },
    base64ToBytes: function base64ToBytes(base64) {
      const bytes = decodeBase64(stringArg(base64, 'base64ToBytes'), base64UrlValues);
      if (typeof bytes === 'string') throw new SyntaxErrorType('base64ToBytes: not base64: ' + bytes);
      return bytes;
    },
    bytesToBase64: function bytesToBase64(bytes) {
      return encodeBase64(byteList(bytes, 'bytesToBase64'));
    },
    hexToBytes: function hexToBytes(hex) {
      return decodeHex(stringArg(hex, 'hexToBytes'), 'hexToBytes');
    },
    bytesToHex: function bytesToHex(bytes) {
      const list = byteList(bytes, 'bytesToHex');
      let hex = '';
      for (let i = 0; i < list.length; i++) hex += hexPairs[list[i]];
      return hex;
    },
  };
  for (const name of ['atob', 'btoa', 'base64ToBytes', 'bytesToBase64', 'hexToBytes', 'bytesToHex']) {
    defineProperty(globalThis, name, { value: helpers[name], writable: true, configurable: true });
  }
  return decodeHex;
})()`;
