"use client";
import { createContext, type ReactNode, useContext } from "react";

// Whether the simulator is on, read once by the layout: with it off, no page offers simulated lines.

interface DashboardSettings {
  simulator: boolean;
}

const Settings = createContext<DashboardSettings>({ simulator: false });

export function DashboardSettingsProvider({ value, children }: { value: DashboardSettings; children: ReactNode }) {
  return <Settings.Provider value={value}>{children}</Settings.Provider>;
}

export const useDashboardSettings = () => useContext(Settings);
