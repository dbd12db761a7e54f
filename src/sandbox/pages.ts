/** The sandbox's list routes: a page of rows in a time range, as the provider paginates them. */
import { listLimits, type Pagination } from '../provider';

export interface ListQuery {
  page: number;
  pageSize: number;
  from?: number;
  to?: number;
}

export interface Page<T> {
  items: T[];
  pagination: Pagination;
}

export function inRange(at: number, { from, to }: ListQuery): boolean {
  return (from === undefined || at >= from) && (to === undefined || at <= to);
}

export function paginate<S, T>(rows: S[], { page, pageSize }: ListQuery, map: (row: S) => T): Page<T> {
  const size = Math.min(Math.max(1, pageSize), listLimits.maxPageSize);
  const totalResults = rows.length;
  return {
    items: rows.slice((page - 1) * size, page * size).map(map),
    pagination: {
      page,
      pageSize: size,
      totalPages: Math.max(1, Math.ceil(totalResults / size)),
      totalResults,
    },
  };
}
