/** The baseline workflows' activities: no I/O, so only Temporal's own cost is measured. */
export const baselineActivities = {
  async benchSend(): Promise<string> {
    return 'sent';
  },
  async benchCheck(): Promise<string> {
    return 'FULFILLED';
  },
};

export type BaselineActivities = typeof baselineActivities;
