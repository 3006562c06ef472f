import { hash } from 'node:crypto';

/** SHA-256 of a string (UTF-8), as lowercase hex. */
export const sha256Hex = (text: string): string => hash('sha256', text, 'hex');
