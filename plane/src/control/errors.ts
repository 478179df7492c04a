// Errors of the control plane API. Each carries the HTTP status it is answered with; the body is
// `{"status": <code>, "error": "<message>"}` (the reference's G1 shape).
import { SluiceError } from '@sluice/runtime';

export class ApiError extends SluiceError {
  readonly status: number;
  constructor(status: number, message: string, options: { cause?: unknown } = {}) {
    super(status === 401 ? 'UNAUTHENTICATED' : status === 403 ? 'PERMISSION_DENIED' : status >= 500 ? 'INTERNAL' : 'BAD_REQUEST', message, options);
    this.status = status;
  }
}
