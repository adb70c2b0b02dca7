"use client";
import { createContext, type ReactNode, useContext } from "react";

// What the server decided for every dashboard page (read once by the layout): whether the
// simulator is on. With it off (production default) no page offers simulated lines or the
// virtual phone, and empty states point to connecting a provider instead.

interface DashboardSettings {
  simulator: boolean;
}

const Settings = createContext<DashboardSettings>({ simulator: false });

export function DashboardSettingsProvider({ value, children }: { value: DashboardSettings; children: ReactNode }) {
  return <Settings.Provider value={value}>{children}</Settings.Provider>;
}

export const useDashboardSettings = () => useContext(Settings);
